// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/secret.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/hex.h"
#include "common/error.h"

namespace hvd::bootstrap {

namespace {

constexpr size_t kSecretBytes = 32;

// Old kernels (< 3.17) have no getrandom(2); /dev/urandom gives the same pool.
void read_urandom(uint8_t *p, size_t len) {
    int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(HVD_ERR_INTERNAL, strprintf("open /dev/urandom: %s", strerror(errno)));
    while (len > 0) {
        ssize_t n = ::read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            ::close(fd);
            throw Error(HVD_ERR_INTERNAL, strprintf("read /dev/urandom: %s", strerror(e)));
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
    ::close(fd);
}

}  // namespace

void random_bytes(void *buf, size_t len) {
    auto *p = static_cast<uint8_t *>(buf);
    while (len > 0) {
        ssize_t n = ::getrandom(p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ENOSYS) return read_urandom(p, len);
        if (n < 0) throw Error(HVD_ERR_INTERNAL, strprintf("getrandom: %s", strerror(errno)));
        p += n;
        len -= static_cast<size_t>(n);
    }
}

std::string random_secret() {
    uint8_t bytes[kSecretBytes];
    random_bytes(bytes, sizeof bytes);
    return to_hex(bytes, sizeof bytes);
}

}  // namespace hvd::bootstrap
