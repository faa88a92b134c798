/* torch(FILE) as a data set: FILE's dataset() returns (x_train, y_train,
 * x_test, y_test) tensors, for data dtsim does not read itself. The
 * helper (torch_helper.h, --dataset) writes them as float32; a sample of
 * three axes keeps its image geometry (channels, height, width), any
 * other shape is flattened to features. An empty test split is held out
 * by test_fraction like every data set's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/path.h"
#include "workloads/dataset_impl.h"
#include "workloads/torch_helper.h"

static wl_dataset *torch_data_create(const sim_spec *sp, const wl_dataset_opts *opts,
                                     sim_err *err)
{
    if (sp->nargs != 1 || !sp->args[0][0]) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': expected torch(FILE), FILE a Python file defining dataset()",
                    opts->spec);
        return NULL;
    }
    char path[SIM_PATH_MAX];
    if (sim_path_resolve(opts->dir, sp->args[0], path, sizeof path, err))
        return NULL;
    char *data;
    size_t len;
    if (wl_torch_helper_dataset(path, &data, &len, err) < 0)
        return NULL;
    long long ntr, nte;
    int dim, classes, c, h, w, head = 0;
    wl_dataset *ds = NULL;
    if (sscanf(data, "dtsim-data %lld %lld %d %d %d %d %d%n", &ntr, &nte, &dim, &classes, &c,
               &h, &w, &head) != 7 || data[head] != '\n' || ntr < 1 || nte < 0 || dim < 1 ||
        len - (size_t)head - 1 != (size_t)((ntr + nte) * (dim + 1)) * sizeof(float)) {
        sim_err_set(err, SIM_EINTERNAL, "%s: a malformed data set from the helper", path);
        goto out;
    }
    ds = wl_dataset_alloc(opts->spec, dim, classes, ntr, nte, err);
    if (!ds)
        goto out;
    const char *p = data + head + 1;
    const size_t fx = (size_t)dim * sizeof(float);
    memcpy(ds->train.x, p, (size_t)ntr * fx);
    p += (size_t)ntr * fx;
    memcpy(ds->train.y, p, (size_t)ntr * sizeof(float));
    p += (size_t)ntr * sizeof(float);
    memcpy(ds->test.x, p, (size_t)nte * fx);
    p += (size_t)nte * fx;
    memcpy(ds->test.y, p, (size_t)nte * sizeof(float));
    ds->channels = c;
    ds->height = h;
    ds->width = w;
out:
    free(data);
    return ds;
}

const wl_dataset_vt wl_dataset_torch_vt = {
    .name = "torch",
    .args = "(FILE)",
    .summary = "FILE's dataset() = (x_train, y_train, x_test, y_test) tensors, run by the "
               "PyTorch helper",
    .create = torch_data_create,
};
