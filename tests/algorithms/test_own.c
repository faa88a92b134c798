/* The run's owner of memory and cleanups (algorithms/core/own.c): cleanups
 * run once, in reverse order of registration, blocks are freed (the
 * sanitizer build finds a leak or a double free), and one sticky flag
 * reports a failed allocation. */
#include <criterion/criterion.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"

static int order[8], n_order;

static void note(void *p) { order[n_order++] = *(int *)p; }

Test(own, cleanups_run_once_in_reverse_order_and_blocks_are_freed)
{
    algo_runner run = {0};
    algo_env env = {.run = &run};
    static int ids[3] = {1, 2, 3};
    n_order = 0;
    for (int k = 0; k < 3; k++)
        cr_assert_eq(algo_env_own(&env, &ids[k], note), &ids[k]);
    cr_assert_null(algo_env_own(&env, NULL, note), "a NULL object registers nothing");
    int *z = algo_env_calloc(&env, 100, sizeof *z);
    cr_assert_not_null(z);
    for (int k = 0; k < 100; k++)
        cr_assert_eq(z[k], 0);
    for (int k = 0; k < 200; k++) /* past the first capacity: the list grows */
        cr_assert_not_null(algo_env_alloc(&env, 16));
    sim_err err = {0};
    cr_assert_eq(algo_env_alloc_check(&env, "m", &err), 0);
    algo_env_release(&env);
    cr_assert_eq(n_order, 3);
    cr_assert(order[0] == 3 && order[1] == 2 && order[2] == 1);
    algo_env_release(&env); /* empty: nothing runs twice */
    cr_assert_eq(n_order, 3);
    cr_assert_eq(run.n_owned, 0);
}

Test(own, a_failed_allocation_is_sticky_until_the_run_ends)
{
    algo_runner run = {0};
    algo_env env = {.run = &run};
    cr_assert_not_null(algo_env_alloc(&env, 8));
    run.oom = 1; /* as a failed malloc leaves it */
    cr_assert_not_null(algo_env_alloc(&env, 8), "a later success does not clear the flag");
    sim_err err = {0};
    cr_assert_eq(algo_env_alloc_check(&env, "gravac", &err), SIM_ENOMEM);
    cr_assert_str_eq(err.msg, "gravac: out of memory");
    algo_env_release(&env);
    cr_assert_eq(run.oom, 0);
}
