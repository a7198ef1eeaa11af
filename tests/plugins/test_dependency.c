/* A library the "needsdep" test plugin links against; the loader test copies
 * the plugin without it to check that the error names the missing file. */
__attribute__((visibility("default"))) int onyx_test_dependency_value(void);
int onyx_test_dependency_value(void) { return 42; }
