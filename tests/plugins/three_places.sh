#!/bin/sh
# Proves docs/architecture.md's plug-in checklists: a plug-in of every
# kind (method, optimizer, compressor, model, dataset, partition, graph) is
# its file, one line in its folder's meson list and one line in its kind's
# .def list, and nothing else. Copies the source tree to a scratch
# directory, adds a throwaway plug-in of each kind in exactly those three
# places, builds only the dtsim executable there and checks that
# `dtsim list` shows each one; then that the generated key reference
# (docs/configuration.md) is stale until tools/gen_config_doc.sh is run, as
# the checklist says, and current after it; then builds the tests and runs
# the suites of every area that holds a plug-in kind or names the
# registries (algorithms, workloads, topology, config, experiment, cli,
# docs) with the throwaway plug-ins in place: a test that pins a
# registry's list, or an invariant a plug-in cannot be told about, fails
# here. TAP output.
#   three_places.sh SOURCE_ROOT
set -u
root=$1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-plugins.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "1..4"
fail() { echo "not ok $1 - $2"; exit 1; }

(cd "$root" && tar --exclude='./build*' --exclude=./.git -cf - .) | (cd "$scratch" && tar -xf -) ||
  fail 1 "copying the source tree"
src=$scratch

# place 1: the files.
cat >"$src/algorithms/methods/zz_method.c" <<'EOF'
#include "algorithms/core/algo.h"
static const cfg_key keys[] = {
    {"algorithm", "zz_knob", "1", CFG_KEY_INT, NULL, "a throwaway method's key"},
    {0},
};
static int create(algo_env *env, void **state, sim_err *err)
{
    (void)env, (void)state;
    return sim_err_set(err, SIM_ECONFIG, "zz_method: a throwaway");
}
static void destroy(void *state) { (void)state; }
static int start(void *state, sim_err *err) { (void)state, (void)err; return 0; }
static const float *model(void *state, float *scratch) { (void)state; return scratch; }
const algo_vt algo_zz_method = {.name = "zz_method", .summary = "a throwaway method",
    .reference = "0", .keys = keys, .create = create, .destroy = destroy, .start = start,
    .model = model};
EOF
cat >"$src/algorithms/optim/optim_zz.c" <<'EOF'
#include "algorithms/optim/optim.h"
static int vectors(const algo_optim_hp *hp) { (void)hp; return 0; }
static void direction(algo_optim_state *s, const float *x, float *g) { (void)s, (void)x, (void)g; }
const algo_optim algo_optim_zz = {.name = "zz_optim", .summary = "a throwaway optimizer",
    .vectors = vectors, .direction = direction};
EOF
cat >"$src/algorithms/compress/compress_zz.c" <<'EOF'
#include "algorithms/compress/compress.h"
static int parse(algo_compressor *c, const char *const *a, int n, sim_err *e) { (void)c, (void)a, (void)n, (void)e; return 0; }
static int64_t entries(const algo_compressor *c, int64_t d) { (void)c; return d; }
static double wire(const algo_compressor *c, int64_t d, int b) { (void)c; return (double)d * b; }
static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *r, algo_compress_msg *m) { (void)c, (void)v, (void)d, (void)r, (void)m; }
static void decode(const algo_compressor *c, const algo_compress_msg *m, float s, float *o) { (void)c, (void)m, (void)s, (void)o; }
const algo_compress_vt algo_compress_zz = {.name = "zz_comp", .args = "", .summary = "a throwaway compressor",
    .size_rule = "S", .parse = parse, .entries = entries, .wire_bytes = wire, .encode = encode,
    .decode_add = decode};
EOF
cat >"$src/workloads/zz_model.c" <<'EOF'
#include "workloads/model.h"
static int create(wl_model *m, const char *const *a, int n, sim_err *e) { (void)m, (void)a, (void)n; return sim_err_set(e, SIM_ECONFIG, "zz"); }
static size_t ws(const wl_model *m, int64_t b) { (void)m, (void)b; return 0; }
static void init(const wl_model *m, float *p, gsl_rng *r) { (void)m, (void)p, (void)r; }
static double lg(const wl_model *m, const float *p, const float *x, const float *y, int64_t b, float *g, float *w) { (void)m, (void)p, (void)x, (void)y, (void)b, (void)g, (void)w; return 0; }
static wl_eval ev(const wl_model *m, const float *p, const float *x, const float *y, int64_t n, float *w, int64_t wb) { (void)m, (void)p, (void)x, (void)y, (void)n, (void)w, (void)wb; wl_eval e = {0}; return e; }
const wl_model_vt wl_zz_model_vt = {.name = "zz_model", .args = "", .summary = "a throwaway model",
    .create = create, .workspace_floats = ws, .init = init, .loss_grad = lg, .evaluate = ev};
EOF
cat >"$src/workloads/zz_data.c" <<'EOF'
#include "workloads/dataset.h"
static wl_dataset *create(const struct sim_spec *sp, const wl_dataset_opts *o, sim_err *e) { (void)sp, (void)o; sim_err_set(e, SIM_ECONFIG, "zz"); return NULL; }
const wl_dataset_vt wl_dataset_zz_data_vt = {.name = "zz_data", .args = "", .summary = "a throwaway dataset", .create = create};
EOF
cat >"$src/workloads/zz_part.c" <<'EOF'
#include "workloads/partition.h"
static wl_partition *build(const wl_partition_req *rq, sim_err *e) { (void)rq; sim_err_set(e, SIM_ECONFIG, "zz"); return NULL; }
const wl_partition_vt wl_partition_zz_part_vt = {.name = "zz_part", .args = "", .summary = "a throwaway partition", .build = build};
EOF
cat >"$src/topology/zz_graph.c" <<'EOF'
#include "topology/graph.h"
static int build(topo_graph *g, const char *const *a, int n, gsl_rng *r, sim_err *e) { (void)g, (void)a, (void)n, (void)r; return sim_err_set(e, SIM_ECONFIG, "zz"); }
const topo_graph_vt topo_graph_zz_graph_vt = {"zz_graph", "", "a throwaway graph", build, 0, 0};
EOF

# place 2: one line in the folder's meson list (after its first file).
sed -i "s/'registry.c', /'registry.c', 'zz_method.c', /; s/'optim.c', /'optim.c', 'optim_zz.c', /; s/'compress.c', /'compress.c', 'compress_zz.c', /" \
  "$src/algorithms/meson.build"
sed -i "s/^    'dataset.c',$/    'dataset.c',\n    'zz_model.c',\n    'zz_data.c',\n    'zz_part.c',/" "$src/workloads/meson.build"
sed -i "s/^    'graph.c',$/    'graph.c',\n    'zz_graph.c',/" "$src/topology/meson.build"

# place 3: one line in the kind's list.
echo 'DTSIM_METHOD(zz_method)' >>"$src/algorithms/methods/methods.def"
echo 'DTSIM_OPTIMIZER(zz)' >>"$src/algorithms/optim/optimizers.def"
echo 'DTSIM_COMPRESSOR(zz)' >>"$src/algorithms/compress/compressors.def"
echo 'DTSIM_MODEL(zz_model)' >>"$src/workloads/models.def"
echo 'DTSIM_DATASET(zz_data)' >>"$src/workloads/datasets.def"
echo 'DTSIM_PARTITION(zz_part)' >>"$src/workloads/partitions.def"
echo 'DTSIM_GRAPH(zz_graph)' >>"$src/topology/graphs.def"

log=$scratch/build.log
if ! { meson setup --buildtype=plain "$src/build" "$src" && ninja -C "$src/build" dtsim; } >"$log" 2>&1; then
  tail -40 "$log" | sed 's/^/# /'
  fail 1 "the scratch tree with a throwaway plug-in of each kind does not build"
fi
echo "ok 1 - a plug-in of each kind in three places builds"

dtsim=$src/build/dtsim
missing=""
for pair in algorithms:zz_method optimizers:zz_optim compressors:zz_comp models:zz_model \
            datasets:zz_data partitions:zz_part graphs:zz_graph; do
  kind=${pair%%:*} name=${pair#*:}
  "$dtsim" list "$kind" | grep -q "$name" || missing="$missing $kind/$name"
done
[ -z "$missing" ] || fail 2 "dtsim list does not show:$missing"
echo "ok 2 - dtsim list shows every throwaway plug-in"

# A method with keys makes the generated key reference stale (the docs
# test fails) until tools/gen_config_doc.sh is run, as the checklist says.
if "$src/tests/docs/check_config_doc.sh" "$dtsim" "$src" >/dev/null 2>&1; then
  fail 3 "the docs test passes with a new method's key missing from docs/configuration.md"
fi
"$src/tools/gen_config_doc.sh" "$dtsim" "$src/docs/configuration.md" >/dev/null 2>&1 ||
  fail 3 "tools/gen_config_doc.sh failed"
grep -q zz_knob "$src/docs/configuration.md" || fail 3 "the regenerated reference lacks zz_knob"
"$src/tests/docs/check_config_doc.sh" "$dtsim" "$src" >/dev/null 2>&1 ||
  fail 3 "the docs test fails after tools/gen_config_doc.sh"
# The README's method list is generated as well (tools/gen_readme_methods.sh).
"$src/tools/gen_readme_methods.sh" "$dtsim" "$src/README.md" >/dev/null 2>&1 ||
  fail 3 "tools/gen_readme_methods.sh failed"
grep -q zz_method "$src/README.md" || fail 3 "the regenerated README lacks zz_method"
echo "ok 3 - the key reference and the README's method list are regenerated by their tools, as documented"

# The suites with the throwaway plug-ins registered: the registry tests
# check them like any entry, and no test may pin a registry's list.
if ! ninja -C "$src/build" >"$log" 2>&1; then
  tail -40 "$log" | sed 's/^/# /'
  fail 4 "the tests do not build with a throwaway plug-in of each kind"
fi
if ! meson test -C "$src/build" --no-rebuild --print-errorlogs --suite algorithms \
     --suite workloads --suite topology --suite config --suite experiment --suite cli \
     --suite docs >"$log" 2>&1; then
  grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|ERROR|TIMEOUT)' "$log" | sed 's/^/# /'
  grep -E 'Assertion Failed|^# |got .want' "$log" | head -40 | sed 's/^/# /'
  fail 4 "a test suite fails with the throwaway plug-ins in place"
fi
echo "ok 4 - the algorithms, workloads, topology, config, experiment, cli and docs suites pass with them"
