/* tests/integration/dlsym_peer_b.c: the second library defining dlsym_probe_value
 * (dlsym_main.c). */
__attribute__((visibility("default"))) int dlsym_probe_value(void) { return 2; }

/* called by dlsym_main, so that the linker keeps this library a dependency of the program */
__attribute__((visibility("default"))) int dlsym_probe_b_marker(void) { return 0; }
