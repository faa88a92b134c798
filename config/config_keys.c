/* The experiment-file schema of the common keys (see config.h): every
 * key with its default, type and doc line, the enum value of every word of
 * the common choice keys, and the names other tools use for a key, for
 * the "did you mean" of an unknown key. Constant tables only. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/config_impl.h"

/* The enum value of every word of the common choice keys. */
static const cfg_choice eval_model_values[] = {
    {"average", CFG_EVAL_AVERAGE}, {"worker0", CFG_EVAL_WORKER0}, {NULL, 0}};
static const cfg_choice sharing_values[] = {
    {"fair", SIM_SHARE_FAIR}, {"none", SIM_SHARE_NONE}, {NULL, 0}};
static const cfg_choice routing_values[] = {
    {"shortest", SIM_ROUTE_SHORTEST}, {"ecmp", SIM_ROUTE_ECMP}, {NULL, 0}};
static const cfg_choice collective_values[] = {
    {"ring", SIM_COLL_RING}, {"tree", SIM_COLL_TREE}, {"ps", SIM_COLL_PS},
    {"hierarchical", SIM_COLL_HIER}, {NULL, 0}};
static const cfg_choice weights_values[] = {
    {"metropolis", CFG_WEIGHTS_METROPOLIS}, {"uniform", CFG_WEIGHTS_UNIFORM},
    {"metropolis_lazy", CFG_WEIGHTS_METROPOLIS_LAZY}, {NULL, 0}};
static const cfg_choice sparse_values[] = {
    {"auto", CFG_SPARSE_AUTO}, {"off", CFG_SPARSE_OFF}, {NULL, 0}};
static const cfg_choice normalize_values[] = {
    {"none", CFG_NORMALIZE_NONE}, {"standard", CFG_NORMALIZE_STANDARD}, {NULL, 0}};
static const cfg_choice init_values[] = {
    {"same", CFG_INIT_SAME}, {"independent", CFG_INIT_INDEPENDENT}, {NULL, 0}};
static const cfg_choice precision_values[] = {
    {"fp32", CFG_PRECISION_FP32}, {"tf32", CFG_PRECISION_TF32}, {"fp16", CFG_PRECISION_FP16},
    {"bf16", CFG_PRECISION_BF16}, {NULL, 0}};
static const cfg_choice torch_batched_values[] = {
    {"auto", 0}, {"on", 1}, {"off", 2}, {NULL, 0}};
static const cfg_choice torch_device_values[] = {{"cpu", 0}, {"cuda", 1}, {NULL, 0}};
static const cfg_choice wire_dtype_values[] = {
    {"fp32", CFG_WIRE_FP32}, {"fp16", CFG_WIRE_FP16}, {"bf16", CFG_WIRE_BF16}, {NULL, 0}};

/* clang-format off */
const cfg_key cfg_keys[] = {
    {"experiment", "name", "", CFG_KEY_STRING, NULL, "run name (default: the file's base name)"},
    {"experiment", "seed", "1", CFG_KEY_INT, NULL, "master seed; every random stream derives from it"},
    {"experiment", "max_iterations", "0", CFG_KEY_INT, NULL, "synchronous rounds or applied updates (0 = no limit)"},
    {"experiment", "max_time", "0", CFG_KEY_TIME, NULL, "simulated time limit (0 = no limit)"},
    {"experiment", "max_epochs", "1", CFG_KEY_DOUBLE, NULL, "passes over the training set, summed over workers (0 = no limit); the default 1 applies only when no other limit is set"},
    {"experiment", "target_accuracy", "0", CFG_KEY_DOUBLE, NULL, "stop when the evaluated model reaches it (0 = none)"},
    {"experiment", "eval_every", "50", CFG_KEY_STRING, NULL, "evaluate every N iterations, or every simulated time such as 2s"},
    {"experiment", "eval_train_samples", "10000", CFG_KEY_STRING, NULL, "training samples used for train_loss, or all"},
    {"experiment", "eval_model", "average", CFG_KEY_CHOICE, "average|worker0", "evaluated model of decentralized and local methods: the workers' average or worker 0's"},
    {"experiment", "trace", "off", CFG_KEY_BOOL, NULL, "record the run's timeline (workers computing, waiting, sending, down; bytes in flight per link) for dtsim trace and dtsim plot --timeline"},
    {"experiment", "trace_max_events", "1000000", CFG_KEY_INT, NULL, "timeline rows recorded at most (about 100 MB of database); past it the run goes on untraced, with a warning"},
    {"workers", "count", "8", CFG_KEY_INT, NULL, "number of workers (1..65536)"},
    {"workers", "compute", "model", CFG_KEY_STRING, NULL, "model, or a distribution of seconds per step such as lognormal(10ms, 0.5)"},
    {"workers", "precision", "fp32", CFG_KEY_CHOICE, "fp32|tf32|fp16|bf16", "arithmetic of the named devices' peaks (tf32, fp16, bf16: tensor cores; a device without that unit is an error)"},
    {"workers", "device", "15.7TFLOPS", CFG_KEY_FLOPS, NULL, "device peak speed or preset (v100), or presets per worker in worker order (v100*8, a100*8; the counts add up to count); used when compute = model"},
    {"workers", "efficiency", "0.5", CFG_KEY_DOUBLE, NULL, "fraction of device peak reached, in (0, 1], or published: from a published single-device throughput of the proxy on each device (dtsim list presets)"},
    {"workers", "stragglers", "0", CFG_KEY_INT, NULL, "number of persistently slow workers (workers 0..stragglers-1)"},
    {"workers", "straggler_slowdown", "5", CFG_KEY_DOUBLE, NULL, "compute-time factor of the stragglers (>= 1)"},
    {"workers", "transient_prob", "0", CFG_KEY_DOUBLE, NULL, "chance that one step is slowed, in [0, 1]"},
    {"workers", "transient_slowdown", "10", CFG_KEY_DOUBLE, NULL, "compute-time factor of a slowed step (>= 1)"},
    {"network", "topology", "star", CFG_KEY_STRING, NULL, "physical network: star | ring | torus(4, 4) | complete | fat_tree(4) | ideal | file(NET.graphml) | hierarchical(NODES, PER_NODE) | dgx1_v100(NODES) | dgx_a100(NODES) | pcie4(NODES)"},
    {"network", "latency", "5us", CFG_KEY_TIME, NULL, "latency per link"},
    {"network", "bandwidth", "10Gbps", CFG_KEY_RATE, NULL, "bandwidth per link"},
    {"network", "sharing", "fair", CFG_KEY_CHOICE, "fair|none", "fair: max-min fair sharing of links; none: alpha-beta"},
    {"network", "routing", "shortest", CFG_KEY_CHOICE, "shortest|ecmp", "shortest: one shortest path per host pair; ecmp: each message hashed over the equal-cost paths (fat trees)"},
    {"network", "collective", "ring", CFG_KEY_CHOICE, "ring|tree|ps|hierarchical", "all-reduce algorithm (hierarchical: reduce inside each server, ring among servers, broadcast inside; needs servers of GPUs)"},
    {"network", "intra_latency", "1us", CFG_KEY_TIME, NULL, "latency of a link inside a server of hierarchical(NODES, PER_NODE)"},
    {"network", "intra_bandwidth", "150GB/s", CFG_KEY_RATE, NULL, "bandwidth of each GPU's link inside a server of hierarchical(NODES, PER_NODE) (NVLink class)"},
    {"network", "efficiency", "1", CFG_KEY_DOUBLE, NULL, "fraction of a link's rate that payload gets, in (0, 1]: a message alone on its route takes latency + S / (efficiency x bandwidth)"},
    {"network", "message_overhead", "0", CFG_KEY_TIME, NULL, "fixed time per message at its sender before its bytes start (software and protocol cost; not shared between flows)"},
    {"network", "collective_overhead", "0", CFG_KEY_TIME, NULL, "fixed time per collective call (a launch, as NCCL pays per all-reduce): each rank starts its all-reduce this long after it calls it"},
    {"network", "efficiency_by_size", "none", CFG_KEY_STRING, NULL, "efficiency by message size, instead of efficiency: SIZE:VALUE pieces from size 0, such as 0:0.5, 64KiB:0.8, 1MiB:0.94 (as SMPI's bw-factor)"},
    {"network", "overhead_by_size", "none", CFG_KEY_STRING, NULL, "message_overhead by message size, instead of message_overhead: SIZE:TIME pieces from size 0, such as 0:20us, 1MiB:40us"},
    {"network", "calibration", "none", CFG_KEY_STRING, NULL, "a [network] fragment written by dtsim calibrate (path relative to the experiment file); the keys this file gives override the fragment's"},
    {"topology", "graph", "ring", CFG_KEY_STRING, NULL, "logical gossip graph"},
    {"topology", "weights", "metropolis", CFG_KEY_CHOICE, "metropolis|uniform|metropolis_lazy", "mixing weights: metropolis (any graph), uniform (regular graphs), metropolis_lazy ((I + W) / 2 of metropolis: eigenvalues in [0, 1])"},
    {"algorithm", "name", "allreduce_sgd", CFG_KEY_STRING, NULL, "training method (dtsim list algorithms)"},
    {"algorithm", "lr", "0.1", CFG_KEY_DOUBLE, NULL, "learning rate (>= 0; 0 = no gradient steps, e.g. pure gossip)"},
    {"algorithm", "momentum", "0", CFG_KEY_DOUBLE, NULL, "momentum, in [0, 1)"},
    {"algorithm", "nesterov", "false", CFG_KEY_BOOL, NULL, "Nesterov momentum"},
    {"algorithm", "weight_decay", "0", CFG_KEY_DOUBLE, NULL, "L2 weight decay (>= 0)"},
    {"algorithm", "optimizer", "sgd", CFG_KEY_STRING, NULL, "update rule"},
    /* the optimizers' keys, from the lists their key tables include too */
#define DTSIM_OPTIM_KEY(key, def, type, doc) {"algorithm", key, def, type, NULL, doc},
#include "config/optim_keys_adam.def"
#include "config/optim_keys_lamb.def"
#undef DTSIM_OPTIM_KEY
    {"algorithm", "clip", "0", CFG_KEY_DOUBLE, NULL, "clip every stochastic gradient to this Euclidean norm (0 = off)"},
    {"algorithm", "bucket", "0", CFG_KEY_SIZE, NULL, "bucket size: a synchronous method's all-reduce goes in buckets that overlap the backward pass (PyTorch DDP: 25MiB); 0 = one all-reduce after it"},
    {"algorithm", "batch", "32", CFG_KEY_STRING, NULL, "samples per worker step, or full (the worker's whole shard)"},
    {"algorithm", "compressor", "none", CFG_KEY_STRING, NULL, "message compressor"},
    {"algorithm", "error_feedback", "true", CFG_KEY_BOOL, NULL, "compressors keep each worker's residual and add it to its next message"},
    {"algorithm", "lr_milestones", "none", CFG_KEY_STRING, NULL, "epochs at which lr is multiplied by lr_decay, e.g. 5, 8 (none = constant)"},
    {"algorithm", "lr_decay", "0.1", CFG_KEY_DOUBLE, NULL, "factor applied at each milestone, in (0, 1]"},
    {"algorithm", "warmup_epochs", "0", CFG_KEY_DOUBLE, NULL, "linear warm-up from lr/10 to lr over this many epochs"},
    {"workload", "model", "softmax", CFG_KEY_STRING, NULL, "model trained"},
    {"workload", "dataset", "fashion_mnist", CFG_KEY_STRING, NULL, "data set"},
    {"workload", "test_fraction", "0.1", CFG_KEY_DOUBLE, NULL, "held out when the dataset has no test part, in [0, 1)"},
    {"workload", "normalize", "none", CFG_KEY_CHOICE, "none|standard", "feature normalisation"},
    {"workload", "sparse", "auto", CFG_KEY_CHOICE, "auto|off", "LIBSVM rows: auto = kept sparse (CSR) for linreg, logreg and softmax, a dense copy for other models; off = always a dense copy (at most 2^28 values)"},
    {"workload", "partition", "iid", CFG_KEY_STRING, NULL, "split of the training set across workers"},
    {"workload", "init", "same", CFG_KEY_CHOICE, "same|independent", "same: one initial model; independent: a draw per worker"},
    {"workload", "proxy", "none", CFG_KEY_STRING, NULL, "none | resnet50 | vgg16 | bert_large | gpt2 | ..."},
    {"workload", "sim_params", "0", CFG_KEY_INT, NULL, "if > 0: parameter count used for message sizes"},
    {"workload", "sim_flops", "0", CFG_KEY_DOUBLE, NULL, "if > 0: training FLOPs per sample used for compute time"},
    {"workload", "wire_dtype", "fp32", CFG_KEY_CHOICE, "fp32|fp16|bf16", "bytes per value on the wire"},
    {"workload", "torch_batched", "auto", CFG_KEY_CHOICE, "auto|on|off", "model = torch(FILE): compute the workers' gradients of one instant in one batched call (functorch.vmap) or one by one; auto = batched when the module has no buffers and at most 50000 parameters"},
    {"workload", "torch_device", "cpu", CFG_KEY_CHOICE, "cpu|cuda", "model = torch(FILE): where the helper computes (cuda needs a GPU that torch sees)"},
    {"workload", "grad_noise", "none", CFG_KEY_STRING, NULL, "noise added to every stochastic gradient: none | gaussian(SIGMA) | subweibull(THETA, SIGMA)"},
    {"faults", "schedule", "none", CFG_KEY_STRING, NULL, "fault events: none, or a CSV file time,event,target,value (crash, rejoin, slowdown, link)"},
    {"faults", "mtbf", "none", CFG_KEY_STRING, NULL, "random crashes: none, or each worker's up-time distribution, e.g. exponential(300s)"},
    {"faults", "downtime", "none", CFG_KEY_STRING, NULL, "time a randomly crashed worker stays down before it rejoins: none (never) or a distribution, e.g. constant(30s); unused without mtbf"},
    {"faults", "sync_timeout", "1s", CFG_KEY_TIME, NULL, "synchronous methods: how long a collective or a gossip step waits for a crashed peer before the survivors go on; the network re-sends a message lost on a down link this long after the loss"},
    {NULL, NULL, NULL, CFG_KEY_STRING, NULL, NULL},
};
/* clang-format on */

static const struct {
    const char *section, *key;
    const cfg_choice *values;
} choice_tables[] = {
    {"experiment", "eval_model", eval_model_values},
    {"network", "sharing", sharing_values},
    {"network", "routing", routing_values},
    {"network", "collective", collective_values},
    {"topology", "weights", weights_values},
    {"workload", "normalize", normalize_values},
    {"workload", "sparse", sparse_values},
    {"workload", "init", init_values},
    {"workload", "wire_dtype", wire_dtype_values},
    {"workload", "torch_batched", torch_batched_values},
    {"workload", "torch_device", torch_device_values},
    {"workers", "precision", precision_values},
};

const cfg_choice *cfg_choice_values(const char *section, const char *key)
{
    for (size_t i = 0; i < sizeof choice_tables / sizeof choice_tables[0]; i++)
        if (strcmp(choice_tables[i].section, section) == 0 &&
            strcmp(choice_tables[i].key, key) == 0)
            return choice_tables[i].values;
    return NULL;
}

const cfg_key *cfg_key_find(const char *section, const char *key)
{
    for (const cfg_key *k = cfg_keys; k->key; k++)
        if (strcasecmp(k->section, section) == 0 && strcasecmp(k->key, key) == 0)
            return k;
    return NULL;
}

/* Names other tools use for a key, so that "learning_rate" finds "lr". */
static const struct {
    const char *alias, *section, *key;
} key_aliases[] = {
    {"learning_rate", "algorithm", "lr"},  {"lr_rate", "algorithm", "lr"},
    {"batch_size", "algorithm", "batch"},  {"batchsize", "algorithm", "batch"},
    {"minibatch", "algorithm", "batch"},
    {"method", "algorithm", "name"},       {"algorithm", "algorithm", "name"},
    {"optim", "algorithm", "optimizer"},   {"compression", "algorithm", "compressor"},
    {"workers", "workers", "count"},       {"n_workers", "workers", "count"},
    {"num_workers", "workers", "count"},   {"nodes", "workers", "count"},
    {"epochs", "experiment", "max_epochs"}, {"iterations", "experiment", "max_iterations"},
    {"steps", "experiment", "max_iterations"}, {"max_steps", "experiment", "max_iterations"},
    {"time", "experiment", "max_time"},    {"bw", "network", "bandwidth"},
    {"link_bandwidth", "network", "bandwidth"}, {"link_latency", "network", "latency"},
    {"network", "network", "topology"},    {"topology", "topology", "graph"},
    {"mixing", "topology", "weights"},     {"data", "workload", "dataset"},
};

void cfg_key_suggest(const char *section, const char *key, const cfg_key *extra,
                            char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
        if (strcasecmp(key_aliases[i].alias, key) == 0 &&
            strcmp(key_aliases[i].section, section) == 0) {
            snprintf(buf, len, "did you mean '%s'?", key_aliases[i].key);
            return;
        }
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
        if (strcasecmp(key_aliases[i].alias, key) == 0) {
            snprintf(buf, len, "did you mean [%s] %s?", key_aliases[i].section,
                     key_aliases[i].key);
            return;
        }
    char known[1024];
    size_t used = 0;
    known[0] = '\0';
    for (const cfg_key *k = cfg_keys; k->key && used < sizeof known; k++)
        if (strcmp(k->section, section) == 0)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", k->key);
    for (const cfg_key *k = extra; k && k->key && used < sizeof known; k++)
        if (!cfg_key_find(section, k->key))
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", k->key);
    char hint[96];
    sim_suggest(key, known, hint, sizeof hint);
    if (hint[0]) {
        snprintf(buf, len, "%.*s", (int)strlen(hint) - 1, hint); /* no trailing blank */
        return;
    }
    /* a key of another section? */
    for (const cfg_key *k = cfg_keys; k->key; k++)
        if (strcasecmp(k->key, key) == 0) {
            snprintf(buf, len, "did you mean [%s] %s?", k->section, k->key);
            return;
        }
    snprintf(buf, len, "known: %s", known);
}
