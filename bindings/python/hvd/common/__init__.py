"""Framework-independent parts shared by ``hvd`` and ``hvd.torch`` (as ``horovod.common``)."""
