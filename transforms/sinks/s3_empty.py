"""Empty objects on S3 through Beam's filesystem.

Beam's S3 writer (`apache_beam.io.aws.s3io.S3Uploader`) always uses a multipart upload and,
for a file of zero bytes, completes it with no part at all, which S3 refuses
("MalformedXML": at least one part is required). A run writes empty files (a job with no
rejects, an empty shard), so an `s3://` output failed at the first of them. S3 accepts a
single part of any size when it is the last one, so an empty file is uploaded as one empty
part. Installed when this module is imported (by the sinks, on every worker) and a no-op
without the `aws` extra.
"""

from __future__ import annotations

from typing import Any

_MARK = "_trajcurate_empty_part"


def allow_empty_s3_objects() -> None:
    try:
        from apache_beam.io.aws import s3io
    except ImportError:  # no `aws` extra: no S3 filesystem to fix
        return
    uploader: Any = s3io.S3Uploader
    if getattr(uploader, _MARK, False):
        return
    finish = uploader.finish

    def finish_with_a_part(self: Any) -> None:
        if not self.parts and not self.buffer:
            self._write_to_s3(b"")
        finish(self)

    uploader.finish = finish_with_a_part
    setattr(uploader, _MARK, True)


allow_empty_s3_objects()
