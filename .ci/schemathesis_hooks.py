"""Schemathesis hooks for .ci/openapi: the one media type of ferry's document that schemathesis
cannot send by itself, and answers of a type it would read as YAML that are not YAML."""

import schemathesis

# A tus PATCH (and a creation that carries bytes) sends raw bytes as
# application/offset+octet-stream: serialized as any octet stream is.
schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")

# A space file is served with the type it was stored with, whatever its bytes: the fuzzer stores
# bodies that are no YAML under a YAML type. schemathesis reads every YAML answer to follow
# links, and a parse error there ended its run; such an answer is kept as its text instead.
import yaml
from schemathesis.core import media_types
from schemathesis.core.deserialization import deserialize_yaml


@schemathesis.deserializer(*media_types.YAML_MEDIA_TYPES)
def stored_yaml(_context, response):
    text = response.content.decode(response.encoding or "utf-8", errors="replace")
    try:
        return deserialize_yaml(text)
    except yaml.YAMLError:
        return text
