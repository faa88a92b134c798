#!/bin/sh
# mpirun starts this once per rank (run.py, --mpi): the rank's program runs
# in namespace $EMU_NS<rank>, so rank i is emulated host i. The ranks reach
# mpirun's PMIx server over TCP at the bridge's address (run.py sets
# PMIX_MCA_ptl_tcp_remote_connections and _if_include for that: by default
# it listens on the loopback of mpirun's namespace, which theirs cannot see).
exec ip netns exec "${EMU_NS:-dtemu}${OMPI_COMM_WORLD_RANK:?not started by mpirun}" "$@"
