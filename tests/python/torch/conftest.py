# SPDX-License-Identifier: Apache-2.0
"""Every rank of an hvdrun job runs the same tests in the same order; each test starts with
the process joined to the job."""

import pytest

import hvd.torch as hvd


@pytest.fixture(autouse=True)
def joined():
    hvd.init()
    yield
