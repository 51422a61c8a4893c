// SPDX-License-Identifier: Apache-2.0
// Randomness from the kernel (getrandom, i.e. /dev/urandom's pool): handshake nonces and job
// secrets.
#pragma once

#include <cstddef>
#include <string>

namespace hvd::bootstrap {

// Fills buf with len cryptographically strong random bytes. Throws
// hvd::Error(HVD_ERR_INTERNAL) if the kernel cannot provide them.
void random_bytes(void *buf, size_t len);

// A fresh job secret: 32 random bytes as 64 lower-case hex characters (printable, so it can
// travel in an environment variable, a file or a unique id).
std::string random_secret();

}  // namespace hvd::bootstrap
