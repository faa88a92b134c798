#include <criterion/criterion.h>
Test(cli, a) { cr_assert(1); }
Test(other, c) { cr_assert(1); }
