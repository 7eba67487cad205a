/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c: whether the runtime's collectives go through NCCL, and the abort of
 * a GPU's NCCL communicator by that GPU's own host thread when a collective
 * passes its deadline. The communicators themselves are made and used by
 * coll.c.
 */
#include "core/core.h"

#ifndef MGPU_HAVE_NCCL
const mgpu__nccl_t *const mgpu__nccl = NULL;
#endif

/* NCCL runs collectives on real devices only; emulated ones go through host memory. */
bool mgpu__coll_uses_nccl(const mgpu_runtime_t *rt) { return mgpu__nccl && rt->dev && !rt->dev->emulated; }

/* Only GPU g's thread uses its communicator, so only it aborts it. */
void mgpu__coll_abort(mgpu_runtime_t *rt, int g) {
  MGPU_LOCK(&rt->coll_lock, MGPU_LK_COLL);
  void *comm = rt->comms_ready ? rt->comms[g] : NULL;
  rt->comms[g] = NULL;
  MGPU_UNLOCK(&rt->coll_lock);
  if (comm) mgpu__nccl->abort(comm);
}
