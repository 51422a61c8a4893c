/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library that is not a libhvd GPU module: it lacks the entry point. */
int hvd_fake_library_marker(void) {
    return 1;
}
