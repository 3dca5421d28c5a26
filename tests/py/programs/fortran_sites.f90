! Call sites of a Fortran program (`use mpi`): MPICH's Fortran bindings (libmpichfort's
! pmpi_bcast_ ...) sit between the user's code and the C MPI_* functions. Five user call
! sites in four routines, each visited every iteration: three Bcasts (two module procedures
! and the main program), two Allreduces in one external subroutine.
module halo
  use mpi
  implicit none
contains
  subroutine exchange_left(x)
    double precision, intent(inout) :: x
    integer :: ierr
    call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end subroutine exchange_left

  subroutine exchange_right(x)
    double precision, intent(inout) :: x
    integer :: ierr
    call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, 1, MPI_COMM_WORLD, ierr)
  end subroutine exchange_right
end module halo

subroutine reduce_twice(x)
  use mpi
  implicit none
  double precision, intent(inout) :: x
  double precision :: y
  integer :: ierr
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(y, x, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
end subroutine reduce_twice

program fortran_sites
  use mpi
  use halo
  implicit none
  integer :: ierr, rank, it
  double precision :: x
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = rank
  do it = 1, 3
    call exchange_left(x)
    call exchange_right(x)
    call reduce_twice(x)
    call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end do
  if (rank == 0) print '(a,f8.1)', 'x ', x
  call MPI_Finalize(ierr)
end program fortran_sites
