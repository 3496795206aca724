/* stub: being written */
int poppy_shim_version(void) { return 1; }
