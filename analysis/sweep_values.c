/* `dtsim sweep`'s value lists: "--grid SECTION.KEY=V1,V2,..." split on
 * the commas outside parentheses, so that a spec with arguments
 * ("lognormal(1ms, 0.5)") stays one value. */
#include "analysis/sweep.h"

#include <stdlib.h>
#include <string.h>

void an_sweep_values_free(char **values, int n)
{
    if (!values)
        return;
    for (int i = 0; i < n; i++)
        free(values[i]);
    free(values);
}

static char *trimmed_dup(const char *s, size_t len)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    char *out = malloc(len + 1);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

int an_sweep_split_values(const char *text, char ***values, sim_err *err)
{
    *values = NULL;
    int n = 0, depth = 0;
    char **vals = NULL;
    const char *start = text;
    for (const char *p = text;; p++) {
        if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            if (--depth < 0)
                goto unbalanced;
        } else if ((*p == ',' && depth == 0) || *p == '\0') {
            if (*p == '\0' && depth != 0)
                goto unbalanced;
            char *v = trimmed_dup(start, (size_t)(p - start));
            char **grown = v ? realloc(vals, (size_t)(n + 1) * sizeof *grown) : NULL;
            if (!grown) {
                free(v);
                an_sweep_values_free(vals, n);
                return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
            }
            vals = grown;
            vals[n++] = v;
            if (!v[0]) {
                an_sweep_values_free(vals, n);
                return sim_err_set(err, SIM_EUSAGE, "'%s': empty value in the list", text);
            }
            if (*p == '\0')
                break;
            start = p + 1;
        }
    }
    *values = vals;
    return n;

unbalanced:
    an_sweep_values_free(vals, n);
    return sim_err_set(err, SIM_EUSAGE, "'%s': unbalanced parentheses", text);
}
