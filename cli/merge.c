/* dtsim merge: the databases of a sweep's parts (`dtsim sweep --part K/N`,
 * one per Slurm array task or GNU parallel job) into one, through the
 * merge an MPI sweep's rank 0 uses (an_db_merge). Every part is checked
 * before anything is written: a dtsim database of this schema version
 * whose runs belong to the same experiment as the output's. */
#include <stdio.h>
#include <string.h>

#include "analysis/db.h"
#include "cli/cli.h"
#include "cli/options.h"

#define MAX_PARTS 4096
#define NAMES_LEN 4096

static const char help_head[] =
    "Usage: dtsim merge OUT.db PART.db... [--force]\n\n"
    "Copies every run of each PART database into OUT.db (created if missing), with\n"
    "new run ids and all their rows, in the order given. A run whose configuration\n"
    "is already done in OUT.db (or in an earlier PART) is not copied again, so a\n"
    "part merged twice adds no second copy of a finished run; a run left 'running'\n"
    "is copied as 'failed'. Made for sweeps\n"
    "split across a cluster without MPI, one database per part:\n"
    "  dtsim sweep exp.ini --grid ... --seeds 1-10 --part 3/8 --db part-3.db\n"
    "  dtsim merge results.db part-*.db\n\n"
    "Before anything is written every PART is checked: it must be a dtsim database\n"
    "of this schema version whose runs belong to the same experiments ([experiment]\n"
    "name) as OUT.db's runs, or as the first PART's when OUT.db has none. Otherwise\n"
    "exit 2 naming the file, and OUT.db is left as it was.\n\n";

/* Opens path read-only and fills its identity; 0, or the exit status after
 * printing the error. */
static int identity_of(const char *path, long *version, char *names)
{
    sim_err err = {0};
    an_db *db = an_db_open_readonly(path, &err);
    if (!db)
        return cli_fail(&err);
    int rc = an_db_identity(db, version, names, NAMES_LEN, &err);
    an_db_close(db);
    return rc ? cli_fail(&err) : 0;
}

int cli_merge_main(int argc, char **argv)
{
    const char *out_path = NULL, *parts[MAX_PARTS];
    cli_list part_list = {.items = parts, .cap = MAX_PARTS};
    int force = 0, status;
    const cli_opt opts[] = {
        CLI_FLAG("--force", NULL, &force,
                 "  --force                merge parts of other experiments too (the schema\n"
                 "                         version must still match)\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "merge", .head = help_head, .opts = opts,
                           .operand = &out_path, .missing = "missing OUT.db and PART.db",
                           .more = &part_list};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    if (part_list.n == 0)
        return cli_usage_error("merge", "%s", "missing PART.db (the databases to merge in)");
    sim_err err = {0};
    an_db *out = an_db_open(out_path, &err);
    if (!out)
        return cli_fail(&err);
    long out_version = 0;
    char want[NAMES_LEN], names[NAMES_LEN];
    if (an_db_identity(out, &out_version, want, sizeof want, &err) != 0) {
        an_db_close(out);
        return cli_fail(&err);
    }
    const char *want_from = out_path;
    for (int i = 0; i < part_list.n; i++) {
        long version = 0;
        int rc = identity_of(parts[i], &version, names);
        if (rc == 0 && version != AN_DB_SCHEMA_VERSION) {
            fprintf(stderr, "dtsim: %s: schema version %ld, not this dtsim's %d: merge it with "
                            "the dtsim that wrote it\n",
                    parts[i], version, AN_DB_SCHEMA_VERSION);
            rc = 2;
        }
        if (rc == 0 && !want[0]) {
            snprintf(want, sizeof want, "%s", names);
            want_from = parts[i];
        } else if (rc == 0 && !force && names[0] && strcmp(names, want) != 0) {
            fprintf(stderr, "dtsim: %s: runs of experiment %s, but %s holds %s: not parts of "
                            "one sweep (--force merges them anyway)\n",
                    parts[i], names, want_from, want);
            rc = 2;
        }
        if (rc != 0) {
            an_db_close(out);
            return rc;
        }
    }
    int total = 0;
    for (int i = 0; i < part_list.n; i++) {
        int n = 0;
        if (an_db_merge(out, parts[i], &n, &err) != 0) {
            an_db_close(out);
            fprintf(stderr, "dtsim: merged %d runs before %s failed\n", total, parts[i]);
            return cli_fail(&err);
        }
        printf("%s: %d run%s merged\n", parts[i], n, n == 1 ? "" : "s");
        total += n;
    }
    an_db_close(out);
    printf("merge: %d runs from %d database%s -> %s\n", total, part_list.n,
           part_list.n == 1 ? "" : "s", out_path);
    return 0;
}
