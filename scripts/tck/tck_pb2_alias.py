"""pytest plugin for the A2A TCK 1.0 line's gRPC runs (`-p tck_pb2_alias`; scripts/conformance.sh).

The TCK imports its generated protobuf module under two names: its transport and
validators as `specification.generated.a2a_pb2`, the generated gRPC stubs as the top-level
`a2a_pb2` (protoc's `import a2a_pb2`; `specification/generated/__init__.py` puts the
directory on sys.path for it). With Debian 12's python3-protobuf (4.21, cpp) the two
imports build two distinct sets of message classes, so every response the stubs return
fails the validators' isinstance checks ("Type mismatch: expected
lf.a2a.v1.SendMessageResponse, got lf.a2a.v1.SendMessageResponse"). This plugin makes
both names one module before any test imports them. It changes no test and no check.
"""

import sys

import specification.generated.a2a_pb2 as _a2a_pb2  # cwd is the TCK's src-1.0

sys.modules.setdefault("a2a_pb2", _a2a_pb2)
