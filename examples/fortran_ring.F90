! fortran_ring: a ring in Fortran with `use mpi` (MPICH routes it through the C MPI_* functions).
! Per iteration: blocking Send/Recv to the right (even ranks send first), Isend/Irecv to both
! neighbours + Waitall, an Allreduce; a Bcast with rotating root every other iteration; a
! Reduce and a Barrier at the end.
! Arguments: -i ITER, -s BYTES, -c MICROSECONDS, -v, --truth DIR (same as the C examples).
program fortran_ring
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, it, iters, nbytes, compute_us, verbose, left, right, k
  integer :: reqs(4), status(MPI_STATUS_SIZE)
  character(len=4096) :: truth, arg
  character, allocatable :: sbuf(:), rbuf(:), lbuf(:), rrbuf(:)
  double precision :: x, total

  iters = 4; nbytes = 256; compute_us = 20; verbose = 0; truth = ''
  k = 1
  do while (k <= command_argument_count())
    call get_command_argument(k, arg)
    select case (trim(arg))
    case ('-i'); k = k + 1; call get_command_argument(k, arg); read (arg, *) iters
    case ('-s'); k = k + 1; call get_command_argument(k, arg); read (arg, *) nbytes
    case ('-c'); k = k + 1; call get_command_argument(k, arg); read (arg, *) compute_us
    case ('-v'); verbose = 1
    case ('--truth'); k = k + 1; call get_command_argument(k, truth)
    case default
      print *, 'usage: fortran_ring [-i ITER] [-s BYTES] [-c MICROSECONDS] [-v] [--truth DIR]'
      stop 2
    end select
    k = k + 1
  end do

  call MPI_Init(ierr)
  call exf_init_f(__LINE__ - 1, trim(truth), verbose)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  allocate (sbuf(nbytes), rbuf(nbytes), lbuf(nbytes), rrbuf(nbytes))
  sbuf = 'x'
  x = rank

  do it = 1, iters
    call exf_compute_f(compute_us)
    if (mod(rank, 2) == 0) then
      call MPI_Send(sbuf, nbytes, MPI_CHARACTER, right, 1, MPI_COMM_WORLD, ierr)
      call exf_p2p_f('Send', __LINE__ - 1, nbytes, MPI_CHARACTER, right, 1, MPI_COMM_WORLD, 0, reqs(1))
      call MPI_Recv(rbuf, nbytes, MPI_CHARACTER, left, 1, MPI_COMM_WORLD, status, ierr)
      call exf_p2p_f('Recv', __LINE__ - 1, nbytes, MPI_CHARACTER, left, 1, MPI_COMM_WORLD, 0, reqs(1))
    else
      call MPI_Recv(rbuf, nbytes, MPI_CHARACTER, left, 1, MPI_COMM_WORLD, status, ierr)
      call exf_p2p_f('Recv', __LINE__ - 1, nbytes, MPI_CHARACTER, left, 1, MPI_COMM_WORLD, 0, reqs(1))
      call MPI_Send(sbuf, nbytes, MPI_CHARACTER, right, 1, MPI_COMM_WORLD, ierr)
      call exf_p2p_f('Send', __LINE__ - 1, nbytes, MPI_CHARACTER, right, 1, MPI_COMM_WORLD, 0, reqs(1))
    end if

    call exf_compute_f(compute_us)
    call MPI_Irecv(lbuf, nbytes, MPI_CHARACTER, left, 2, MPI_COMM_WORLD, reqs(1), ierr)
    call exf_p2p_f('Irecv', __LINE__ - 1, nbytes, MPI_CHARACTER, left, 2, MPI_COMM_WORLD, 1, reqs(1))
    call MPI_Irecv(rrbuf, nbytes, MPI_CHARACTER, right, 3, MPI_COMM_WORLD, reqs(2), ierr)
    call exf_p2p_f('Irecv', __LINE__ - 1, nbytes, MPI_CHARACTER, right, 3, MPI_COMM_WORLD, 1, reqs(2))
    call MPI_Isend(sbuf, nbytes, MPI_CHARACTER, right, 2, MPI_COMM_WORLD, reqs(3), ierr)
    call exf_p2p_f('Isend', __LINE__ - 1, nbytes, MPI_CHARACTER, right, 2, MPI_COMM_WORLD, 1, reqs(3))
    call MPI_Isend(sbuf, nbytes, MPI_CHARACTER, left, 3, MPI_COMM_WORLD, reqs(4), ierr)
    call exf_p2p_f('Isend', __LINE__ - 1, nbytes, MPI_CHARACTER, left, 3, MPI_COMM_WORLD, 1, reqs(4))
    call exf_snapshot_f(4, reqs)
    call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
    call exf_waitall_f(__LINE__ - 1, 4, reqs)

    call MPI_Allreduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call exf_coll_f(2, __LINE__ - 1, MPI_COMM_WORLD, -1, 1, MPI_DOUBLE_PRECISION)
    if (mod(it, 2) == 0) then
      call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, mod(it, nprocs), MPI_COMM_WORLD, ierr)
      call exf_coll_f(1, __LINE__ - 1, MPI_COMM_WORLD, mod(it, nprocs), 1, MPI_DOUBLE_PRECISION)
    end if
  end do

  call MPI_Reduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call exf_coll_f(3, __LINE__ - 1, MPI_COMM_WORLD, 0, 1, MPI_DOUBLE_PRECISION)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call exf_coll_f(0, __LINE__ - 1, MPI_COMM_WORLD, -1, 0, MPI_CHARACTER)

  deallocate (sbuf, rbuf, lbuf, rrbuf)
  call exf_before_finalize_f(__LINE__ + 1)
  call MPI_Finalize(ierr)
  call exf_after_finalize_f()

end program fortran_ring
