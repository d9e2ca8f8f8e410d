"""A pytest plugin for running ceph's s3-tests against an S3 endpoint that lives below a path
(ferry's door is at /s3): s3-tests builds its endpoint from host and port only, so the path is
appended once its configuration is read. Set S3_ENDPOINT_PATH (default /s3)."""

import os

import s3tests.functional as functional

_configure = functional.configure


def _configure_with_path():
    _configure()
    functional.config.default_endpoint += os.environ.get("S3_ENDPOINT_PATH", "/s3")


functional.configure = _configure_with_path
