// A library a test plugin needs through its runpath ($ORIGIN/../libs): loader tests put it there,
// in a directory and with an owner of their choosing.
int radial_runpath_dep(void);
int radial_runpath_dep(void) { return 42; }
