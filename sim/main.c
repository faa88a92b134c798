#include <stdio.h>
int main(void) { puts("dtsim: being written"); return 0; }
