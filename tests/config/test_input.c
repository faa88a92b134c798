/* Input files read whole (config/input.c): a NUL byte in an experiment
 * file or a calibration fragment is an error naming the file and line,
 * not the silent end of the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/input.h"
#include "tests/common.h"

static void write_bytes(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

Test(input, reads_a_file_whole)
{
    char path[] = "/tmp/dtsim_input_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_bytes(path, "a\nb\n", 4);
    char *text = NULL;
    size_t len = 0;
    sim_err err = {0};
    cr_assert_eq(cfg_input_read(path, "a test", &text, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(len, 4);
    cr_assert_str_eq(text, "a\nb\n");
    free(text);
    write_bytes(path, "", 0);
    cr_assert_eq(cfg_input_read(path, "a test", &text, &len, &err), 0, "%s", err.msg);
    cr_assert_str_eq(text, "");
    free(text);
    cr_assert_eq(cfg_input_read("/tmp", "a test", &text, &len, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "/tmp: is a directory, expected a test");
    cr_assert_null(text);
    unlink(path);
}

Test(input, a_nul_in_an_experiment_file_names_file_and_line)
{
    char dir[] = "/tmp/dtsim_input_XXXXXX", path[64], want[200];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/e.ini", dir);
    /* everything after the NUL would be lost: here the stop rule */
    static const char text[] = "[experiment]\nseed = 3\n\0\nmax_iterations = 2\n";
    write_bytes(path, text, sizeof text - 1);
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_EINPUT);
    snprintf(want, sizeof want, "%s:3: a NUL byte at column 1: expected an experiment file "
             "(INI), a text file", path);
    cr_assert_str_eq(err.msg, want);
    unlink(path);
    rmdir(dir);
}

Test(input, a_nul_in_a_calibration_fragment_names_file_and_line)
{
    char dir[] = "/tmp/dtsim_input_XXXXXX", path[64], frag[64], want[300];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/e.ini", dir);
    snprintf(frag, sizeof frag, "%s/c.ini", dir);
    static const char ini[] = "[experiment]\nmax_iterations = 2\n[network]\n"
                              "calibration = c.ini\n";
    static const char cal[] = "[network]\nlatency = 3us\nbandwidth = 1G\0bps\n";
    write_bytes(path, ini, sizeof ini - 1);
    write_bytes(frag, cal, sizeof cal - 1);
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_EINPUT);
    snprintf(want, sizeof want, "%s:4: [network] calibration: %s:3: a NUL byte at column 15: "
             "expected a calibration fragment (INI [network] keys), a text file", path, frag);
    cr_assert_str_eq(err.msg, want);
    unlink(frag);
    unlink(path);
    rmdir(dir);
}
