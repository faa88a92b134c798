#!/bin/sh
# mpirun starts this once per rank (run.py, --mpi): the rank's program runs
# in namespace $EMU_NS<rank>, so rank i is emulated host i. The ranks still
# reach mpirun's daemon through its Unix socket (the file system is shared).
exec ip netns exec "${EMU_NS:-dtemu}${OMPI_COMM_WORLD_RANK:?not started by mpirun}" "$@"
