// SPDX-License-Identifier: Apache-2.0
// hvdrun --elastic-controller: an elastic job whose workers another program starts and
// watches (hvd.ray's driver, which runs them as Ray actors). hvdrun keeps what it does for its
// own elastic jobs, the membership service, its rounds and the end of the job below min_np
// (elastic_driver.h), and talks to the controller over its stdin and stdout in the line
// protocol of controller_protocol.h instead of starting processes. Single-threaded: one poll
// over the controller's input, the membership service and the signal pipe, with a timeout.
#pragma once

namespace hvdrun {

class ElasticDriver;

// Runs until every started worker has exited (0 when none failed the job), the job fails
// (1, after a `failed` line), the controller stops it or closes its input, or a signal
// (128+signal). `in_fd` and `out_fd` are the controller's pipes.
int run_controlled(ElasticDriver *driver, int signal_fd, int in_fd, int out_fd);

}  // namespace hvdrun
