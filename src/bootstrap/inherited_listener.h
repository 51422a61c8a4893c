// The rendezvous socket a launcher bound for rank 0 and passed down (hvdrun: the number in
// HVD_RENDEZVOUS_FD), so that the port stays taken from the launcher's choice on: another
// job's launcher could otherwise pick the same free port while rank 0 starts, and ranks of one
// job would then meet the other job's server.
#pragma once

#include "bootstrap/socket_io.h"

namespace hvd::bootstrap {

// A socket for a rendezvous server on `port`, from the launcher's: valid when `fd_text` (the
// variable's value, nullptr when unset) names a listening TCP socket of this process bound to
// `port`. The first such socket is kept for the life of the process (made non-blocking and
// close-on-exec); each call returns a close-on-exec duplicate that the caller owns. So every
// session of the process serves on the same socket, and the port never has to be bound again:
// a process between the launcher and this one (a shell that did not exec) holds a copy, which
// would keep a new bind from succeeding. Otherwise an invalid Fd: when no socket was kept, a
// number that names anything else (a value inherited from elsewhere) is left open and
// untouched, with a warning when it is not empty; the caller then binds the port itself.
// Thread-safe.
Fd take_inherited_listener(const char *fd_text, int port);

}  // namespace hvd::bootstrap
