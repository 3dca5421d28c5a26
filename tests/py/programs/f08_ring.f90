! use mpi_f08: MPICH's f08 bindings call some PMPI_ functions directly (PMPI_Init,
! PMPI_Finalize, ...), so the collector must start lazily and finish at process exit.
program f08_ring
  use mpi_f08
  implicit none
  integer :: rank, size, i, right, left
  double precision :: sendbuf(8), recvbuf(8), total
  type(MPI_Request) :: reqs(2)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  sendbuf = rank
  do i = 1, 3
    call MPI_Irecv(recvbuf, 8, MPI_DOUBLE_PRECISION, left, i, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(sendbuf, 8, MPI_DOUBLE_PRECISION, right, i, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    call MPI_Send(sendbuf, 8, MPI_DOUBLE_PRECISION, right, 50, MPI_COMM_WORLD)
    call MPI_Recv(recvbuf, 8, MPI_DOUBLE_PRECISION, left, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  end do
  call MPI_Allreduce(sendbuf(1), total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a,f6.1)', 'total ', total
  call MPI_Finalize()
end program f08_ring
