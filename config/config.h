/* Experiment configuration: INI file (parsed with inih) + --set overrides
 * -> a typed cfg_config with every default filled in.
 *
 * One schema table (cfg_keys) drives parsing, defaults, validation,
 * the canonical text, the params rows and `dtsim run --help`. Method-specific
 * [algorithm] keys are declared by each algorithm (algo_vt.keys, the same
 * cfg_key type) and stored as resolved text entries; an algorithm reads them
 * with cfg_get_*. Unknown sections or keys are errors naming
 * file:line and the key; so are values that do not parse.
 *
 * Canonical text: "[section]\nkey = value\n" for every key of the schema
 * and of the chosen algorithm, in schema order, values normalised: times as
 * integer nanoseconds ("5000ns"), rates "1250000000B/s", sizes "...B",
 * speeds "...FLOPS", plain numbers in the shortest form that reads back
 * exactly, spec names lower-cased with single ", " separators. Two runs with
 * equal canonical text are the same experiment. A value is at most 511
 * characters; a line longer than inih's 198 is read whole (its value handed
 * to the handler beside inih, as a quoted one is). */
#ifndef DTSIM_CONFIG_CONFIG_H
#define DTSIM_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "sim/collective.h"
#include "sim/compute.h"
#include "sim/err.h"
#include "sim/network.h"
#include "sim/units.h"

typedef enum cfg_key_type {
    CFG_KEY_INT,     /* int64 */
    CFG_KEY_DOUBLE,  /* plain number */
    CFG_KEY_TIME,    /* sim_time (ns) */
    CFG_KEY_RATE,    /* bytes per second */
    CFG_KEY_SIZE,    /* bytes */
    CFG_KEY_FLOPS,   /* FLOP/s */
    CFG_KEY_BOOL,    /* int 0/1 */
    CFG_KEY_STRING,  /* free text / spec, validated by its consumer */
    CFG_KEY_CHOICE   /* one of `choices` ("a|b|c"), stored as its enum value (int) */
} cfg_key_type;

/* One word of a choice key and the enum value it stands for. */
typedef struct cfg_choice {
    const char *name;
    int value;
} cfg_choice;

typedef struct cfg_key {
    const char *section;  /* "experiment", "workers", ... */
    const char *key;
    const char *def;      /* default as text */
    cfg_key_type type;
    const char *choices;  /* CFG_KEY_CHOICE: "ring|tree|ps" */
    const char *doc;      /* one line, for --help and the README */
    /* A method key read by algorithms' algo_keys_read (size 0: read by its
     * consumer): the range from lo to hi, each end open or closed as bounds
     * says ("(]"; NULL: any value; hi = INFINITY: no upper bound), and the
     * offset and size of its field in the method's state (ext: in the
     * state's extension). The key documentation prints the range. */
    double lo, hi;
    const char *bounds;
    size_t offset;
    unsigned char size, ext;
} cfg_key;

/* Enums of the common choice keys that no lower layer defines ([network]
 * sharing and collective are sim_sharing and sim_coll_kind). */
typedef enum cfg_eval_model { CFG_EVAL_AVERAGE = 0, CFG_EVAL_WORKER0 = 1 } cfg_eval_model;
typedef enum cfg_weights_kind {
    CFG_WEIGHTS_METROPOLIS = 0,
    CFG_WEIGHTS_UNIFORM = 1,
    CFG_WEIGHTS_METROPOLIS_LAZY = 2
} cfg_weights_kind;
typedef enum cfg_normalize_kind {
    CFG_NORMALIZE_NONE = 0,
    CFG_NORMALIZE_STANDARD = 1
} cfg_normalize_kind;
typedef enum cfg_sparse_mode {
    CFG_SPARSE_AUTO = 0, /* sparse rows for models with sparse kernels */
    CFG_SPARSE_OFF = 1   /* always a dense copy */
} cfg_sparse_mode;
typedef enum cfg_init_kind { CFG_INIT_SAME = 0, CFG_INIT_INDEPENDENT = 1 } cfg_init_kind;
typedef enum cfg_wire_dtype {
    CFG_WIRE_FP32 = 0,
    CFG_WIRE_FP16 = 1,
    CFG_WIRE_BF16 = 2
} cfg_wire_dtype;

/* [workers] precision: the arithmetic of the device peaks (the values of
 * workloads' wl_precision). */
typedef enum cfg_precision {
    CFG_PRECISION_FP32 = 0,
    CFG_PRECISION_TF32 = 1,
    CFG_PRECISION_FP16 = 2,
    CFG_PRECISION_BF16 = 3
} cfg_precision;

/* [workers] device given by name: `count` consecutive workers with that
 * device (groups in worker order; one group when one name is given). */
typedef struct cfg_device_group {
    char name[24];               /* the preset's name, lower case */
    int count;                   /* workers */
    double flops;                /* its peak at [workers] precision, FLOP/s */
} cfg_device_group;

#define CFG_MAX_DEVICE_GROUPS 16

/* One resolved key: canonical value text and where it came from. */
typedef struct cfg_entry {
    char section[32];
    char key[48];
    char value[512];      /* canonical text */
    char raw[512];        /* as written by the user (or the default) */
    int line;             /* line in the file, 0 = default, -1 = --set */
} cfg_entry;

#define CFG_EVAL_ALL (-1)
#define CFG_MAX_MILESTONES 16

typedef struct cfg_config {
    char path[512];              /* the experiment file, for messages */

    /* [experiment] */
    char name[128];
    uint64_t seed;
    int64_t max_iterations;      /* 0 = no limit */
    sim_time max_time;           /* 0 = no limit */
    double max_epochs;           /* 0 = no limit */
    double target_accuracy;      /* 0 = none */
    int64_t eval_every_iters;    /* > 0 when eval_every is a count */
    sim_time eval_every_time;    /* > 0 when eval_every is a time */
    int64_t eval_train_samples;  /* CFG_EVAL_ALL or a count */
    cfg_eval_model eval_model;   /* the workers' average or worker 0's model */

    /* [workers] */
    int n_workers;
    sim_compute_opts compute;    /* dist, device, efficiency, stragglers...
                                  * (device_flops: the first group's peak) */
    cfg_precision precision;     /* [workers] precision */
    int n_device_groups;         /* 0: device is a speed; else named groups */
    cfg_device_group device_groups[CFG_MAX_DEVICE_GROUPS];
    int efficiency_published;    /* 1: efficiency = published (per device and
                                  * proxy, resolved by the experiment) */

    /* [network] */
    char net_topology[512];      /* spec text, e.g. "star", "torus(4, 4)" */
    double latency;              /* seconds per link */
    double bandwidth;            /* bytes per second per link */
    sim_sharing sharing;
    sim_routing routing;
    sim_coll_kind collective;    /* SIM_COLL_RING, SIM_COLL_TREE, SIM_COLL_PS or SIM_COLL_HIER */
    double intra_latency;        /* seconds per link inside a server */
    double intra_bandwidth;      /* bytes per second per GPU link inside a server */
    double net_efficiency;       /* payload fraction of a link's rate, (0, 1] */
    double message_overhead;     /* seconds per message at its sender */
    double collective_overhead;  /* seconds per collective call */
    sim_net_by_size efficiency_by_size; /* by message size; n = 0: none */
    sim_net_by_size overhead_by_size;   /* seconds by message size; n = 0: none */
    char calibration[512];       /* the fragment's path as written, or "none" */

    /* [topology] */
    char graph[512];             /* spec text */
    cfg_weights_kind weights;

    /* [algorithm] (common keys) */
    char algorithm[64];
    double lr;
    double momentum;
    int nesterov;
    double weight_decay;
    char optimizer[32];          /* update rule, a name of algo_optim_registry */
    double beta1, beta2;         /* adam, adamw, lamb: moment decay rates, [0, 1) */
    double eps;                  /* adam, adamw, lamb: added to sqrt(v), > 0 */
    int bias_correction;         /* adam, adamw, lamb: 1 = divide by 1 - beta^t */
    double lamb_min_trust;       /* lamb: trust-ratio bounds, 0 <= min <= max */
    double lamb_max_trust;
    double bucket;               /* bytes per gradient bucket; 0 = no buckets */
    double clip;                 /* Euclidean norm every gradient is clipped to; 0 = off */
    int batch;                   /* per worker; 0 = full shard */
    char compressor[128];        /* spec text, e.g. "none", "topk(0.01)" */
    int error_feedback;          /* 1: compressors keep a per-worker residual */
    double lr_milestones[CFG_MAX_MILESTONES]; /* epochs, increasing */
    int n_lr_milestones;
    double lr_decay;             /* factor at each milestone, (0, 1] */
    double warmup_epochs;        /* linear warm-up from lr/10 to lr */

    /* [workload] */
    char model[256];
    char dataset[1024];
    double test_fraction;
    cfg_normalize_kind normalize;
    cfg_sparse_mode sparse;      /* LIBSVM rows: kept sparse or a dense copy */
    char partition[128];
    cfg_init_kind init;          /* one initial model, or a draw per worker */
    char proxy[64];
    int64_t sim_params;          /* 0 = the model's own */
    double sim_flops;            /* 0 = the model's own, FLOPs per sample */
    int wire_bytes;              /* 4 fp32, 2 fp16/bf16 */
    cfg_wire_dtype wire_dtype;

    /* every resolved key in canonical order, incl. the algorithm's own */
    cfg_entry *entries;
    int n_entries;
} cfg_config;

/* The schema of the common keys, NULL-key terminated. */
extern const cfg_key cfg_keys[];
/* The {word, enum value} table of a common choice key, NULL-name
 * terminated: the value stored for a word is looked up by name, so the
 * order of the words in choices carries no meaning. NULL for other keys
 * (a method's choice keys are read as text with cfg_get_string). */
const cfg_choice *cfg_choice_values(const char *section, const char *key);

/* What the config layer needs from the layers above it (the registries
 * of methods, optimizers and devices), handed to every load so that this
 * layer holds no global state. xp_experiment_schema()
 * (experiment/experiment.h) returns the standard one. A NULL schema, or a
 * NULL member, means no such registry: any algorithm name, with its
 * [algorithm] keys kept as text; any optimizer name (the method's builder
 * rejects an unknown one); no named devices. */
typedef struct cfg_schema {
    /* The method's own keys (NULL-key terminated, section "algorithm"),
     * or NULL for an unknown name. */
    const cfg_key *(*algo_keys)(const char *algorithm);
    /* The i-th known algorithm name, NULL past the end (for the message
     * about an unknown one). */
    const char *(*algo_name)(int i);
    /* The i-th known optimizer name ([algorithm] optimizer), NULL past the
     * end. */
    const char *(*optim_name)(int i);
    /* Named speeds for FLOPS keys ([workers] device = v100) at a precision
     * (cfg_precision): FLOP/s > 0 for a known name, 0 for an unknown one,
     * -1 for a device without that precision; then, when names is not
     * NULL, it receives the precisions the device has ("fp32, fp16"). */
    double (*device_flops)(const char *name, int precision, char *names, size_t len);
} cfg_schema;

/* Loads path, applies overrides ("section.key=value", n_overrides of them),
 * fills every default, validating against schema (may be NULL, see
 * above). On error returns SIM_ECONFIG (or SIM_EINPUT if the file cannot
 * be read) with "path:line: [section] key: what" in err, and leaves *cfg
 * released. */
int cfg_load(const cfg_schema *schema, const char *path,
                    const char *const *overrides, int n_overrides, cfg_config *cfg,
                    sim_err *err);
/* The same from text in memory (name is used in messages as the file, and
 * its folder is the one relative paths of the experiment resolve against). */
int cfg_load_string(const cfg_schema *schema, const char *name,
                           const char *text, const char *const *overrides, int n_overrides,
                           cfg_config *cfg, sim_err *err);
void cfg_release(cfg_config *cfg);

/* Copies the [network] transport parameters (efficiency, message and
 * collective overheads, the tables by size) into a network description. */
void cfg_net_transport(const cfg_config *cfg, sim_net_desc *d);

/* Canonical text (malloc'd, caller frees). */
char *cfg_canonical(const cfg_config *cfg);

/* The entry's value as the user wrote it (or its default as the schema
 * writes it), normalized only in spacing: blanks trimmed, none between a
 * number and its unit ("10 Gbps" -> "10Gbps"), and spec arguments and
 * lists separated by ", " ("torus( 4,4 )" -> "torus(4, 4)"). An empty text
 * (experiment.name's default) gives the canonical value. The params table
 * stores this. */
void cfg_entry_written(const cfg_entry *e, char *out, size_t len);
/* The entry's value as one number in SI base units when it is one: plain
 * numbers as they are, times in seconds, rates in bytes/s, sizes in bytes,
 * speeds in FLOP/s. Returns 1 and sets *out, or 0 (text, choice, bool,
 * spec, a list, "full", "all"). The params table's num column. */
int cfg_entry_number(const cfg_entry *e, double *out);

/* Resolved entry lookup (any section); NULL if absent. */
const cfg_entry *cfg_find(const cfg_config *cfg, const char *section,
                                 const char *key);
/* Typed getters of resolved entries (method keys). They return 0, or
 * SIM_ECONFIG naming path:line and key when the value does not parse. */
int cfg_get_double(const cfg_config *cfg, const char *section, const char *key,
                          double *out, sim_err *err);
int cfg_get_int(const cfg_config *cfg, const char *section, const char *key,
                       int64_t *out, sim_err *err);
int cfg_get_bool(const cfg_config *cfg, const char *section, const char *key,
                        int *out, sim_err *err);
int cfg_get_time(const cfg_config *cfg, const char *section, const char *key,
                        sim_time *out, sim_err *err);
const char *cfg_get_string(const cfg_config *cfg, const char *section,
                                  const char *key);
/* An error about a resolved entry, formatted "path:line: [section] key: msg"
 * (or "--set section.key=value: msg" / "path: [section] key (default): msg"). */
int cfg_error(const cfg_config *cfg, const char *section, const char *key,
                     int code, sim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
