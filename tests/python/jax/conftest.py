# SPDX-License-Identifier: Apache-2.0
"""Every rank of an hvdrun job runs the same tests in the same order; each test starts with
the process joined to the job. 64-bit types are on so that int64 and float64 are tested."""

import jax
import pytest

jax.config.update("jax_enable_x64", True)

import hvd.jax as hvd  # noqa: E402


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield
