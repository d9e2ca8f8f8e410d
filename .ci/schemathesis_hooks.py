"""Schemathesis hooks for .ci/openapi: the one media type of ferry's document that schemathesis
cannot send by itself."""

import schemathesis

# A tus PATCH (and a creation that carries bytes) sends raw bytes as
# application/offset+octet-stream: serialized as any octet stream is.
schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
