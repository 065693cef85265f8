"""Regenerates vectors.json: HMAC-SHA256 signatures computed by Python's hmac
module over Jupyter message frames, the way jupyter_client.session signs them.

    python3 kernel/wire/testdata/gen_vectors.py > kernel/wire/testdata/vectors.json
"""
import hashlib
import hmac
import json

CASES = [
    ("simple", "a0436f6c-1916-498b-8eb9-e81ab9368e84",
     {"msg_id": "m1", "session": "s1", "username": "u", "date": "2026-01-01T00:00:00.000000Z", "msg_type": "kernel_info_request", "version": "5.3"},
     {}, {}, {}),
    ("execute", "secret",
     {"msg_id": "m2", "session": "s1", "username": "u", "date": "2026-01-01T00:00:01.000000Z", "msg_type": "execute_request", "version": "5.3"},
     {}, {}, {"code": "print('héllo ✓')", "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}),
    ("reply-with-parent", "k" * 64,
     {"msg_id": "m3", "session": "k1", "username": "u", "date": "2026-01-01T00:00:02.000000Z", "msg_type": "stream", "version": "5.3"},
     {"msg_id": "m2", "session": "s1", "username": "u", "date": "2026-01-01T00:00:01.000000Z", "msg_type": "execute_request", "version": "5.3"},
     {"started": "x"}, {"name": "stdout", "text": "line\n\u0000\ud7ff"}),
    ("empty-key-bytes", "\x00\x01binary\xff",
     {"msg_id": "m4", "msg_type": "status"}, {}, {}, {"execution_state": "idle"}),
]

out = []
for name, key, header, parent, metadata, content in CASES:
    frames = [json.dumps(x, separators=(",", ":"), ensure_ascii=False).encode() for x in (header, parent, metadata, content)]
    keyb = key.encode("latin-1")
    h = hmac.new(keyb, digestmod=hashlib.sha256)
    for f in frames:
        h.update(f)
    out.append({
        "name": name,
        "key_hex": keyb.hex(),
        "frames": [f.decode() for f in frames],
        "signature": h.hexdigest(),
    })
print(json.dumps(out, indent=1, ensure_ascii=False))
