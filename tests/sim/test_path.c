/* File names resolved against a folder (sim/path.c): the folder of an
 * experiment file, relative and absolute names, and a name too long. */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/path.h"

Test(path, the_folder_of_a_file)
{
    static const struct {
        const char *file, *dir;
    } cases[] = {
        {"experiments/a.ini", "experiments"}, {"a.ini", ""},     {"/a.ini", "/"},
        {"/x/y/a.ini", "/x/y"},               {"x//a.ini", "x"}, {"../e/a.ini", "../e"},
        {"./a.ini", "."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        sim_path_dir(cases[i].file, out, sizeof out);
        cr_assert_str_eq(out, cases[i].dir, "%s", cases[i].file);
    }
    char small[4];
    sim_path_dir("abcdef/a.ini", small, sizeof small);
    cr_assert_str_eq(small, "abc", "truncated");
}

Test(path, names_resolve_against_the_folder_unless_absolute)
{
    static const struct {
        const char *dir, *name, *want;
    } cases[] = {
        {"experiments", "f.csv", "experiments/f.csv"},
        {"experiments/", "f.csv", "experiments/f.csv"},
        {"/", "f.csv", "/f.csv"},
        {"", "f.csv", "f.csv"},
        {NULL, "f.csv", "f.csv"},
        {"experiments", "/data/f.csv", "/data/f.csv"},
        {"..", "sub/f.csv", "../sub/f.csv"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[SIM_PATH_MAX];
        sim_err err = {0};
        cr_assert_eq(sim_path_resolve(cases[i].dir, cases[i].name, out, sizeof out, &err), 0);
        cr_assert_str_eq(out, cases[i].want);
    }
    char out[12];
    sim_err err = {0};
    cr_assert_eq(sim_path_resolve("folder", "name.csv", out, sizeof out, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "folder/name.csv: file name too long (max 11 characters)");
}
