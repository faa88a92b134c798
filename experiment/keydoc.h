/* The documentation line of an experiment-file key as `dtsim list keys`
 * (and so docs/configuration.md) shows it. A key whose values are the
 * entries of a plug-in registry gets the registry's names and arguments
 * appended, so its list of choices cannot drift from the registries. */
#ifndef DTSIM_EXPERIMENT_KEYDOC_H
#define DTSIM_EXPERIMENT_KEYDOC_H

#include <stddef.h>

#include "config/config.h"

/* k's doc with its checked range when it has one (" (in (0, 1])",
 * " (>= 1)"), followed for [algorithm] optimizer and compressor, [topology]
 * graph and [workload] model, dataset and partition by ": a | b(x) | ...
 * (dtsim list KIND)". Writes into buf (len bytes, truncated to fit) and
 * returns it; "" when k has no doc. */
const char *xp_key_doc(const cfg_key *k, char *buf, size_t len);

#endif
