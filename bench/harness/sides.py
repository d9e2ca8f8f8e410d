"""The servers: ferry, nginx (with nchan for the events), s3s-fs, and the S3 endpoints as the S3
workloads reach them."""

import os
import shutil
import urllib.parse

from .common import MIB, BenchError
from .http import http, http_json
from .procs import CHILDREN, free_port, run, start, wait_port


class Ferry:
    def __init__(self, binary, work, big_bytes):
        # The limits let every workload's largest file through (big_bytes: the largest of them).
        self.binary = binary
        self.data = os.path.join(work, "ferry-data")
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.addr}"
        self.secret = "bench-secret-" + os.urandom(8).hex()
        self.env = {**os.environ, "FERRY_JWT_SECRET": self.secret, "FERRY_LOG": "warn"}
        limit = str(max(big_bytes * 2, 200 * MIB))
        self.proc = start(
            [
                binary, "serve", "--data", self.data, "--addr", self.addr,
                "--upload-max-bytes", limit, "--publish-max-bytes", limit,
                "--sandbox-max-bytes", limit, "--space-max-bytes", limit,
                # The event workloads hold up to 1,000 streams with one token.
                "--max-streams-per-principal", "2000",
                # The command workload runs up to 8 clients at once.
                "--execute-concurrent", "8",
            ],
            os.path.join(work, "ferry.log"),
            env=self.env,
        )
        wait_port(self.port, self.proc, "ferry")
        self.user = self.token("--user", "u")

    @property
    def pid(self):
        return self.proc.pid

    def token(self, *args):
        out, _ = run([self.binary, "token", "--ttl", "24h", *args], env=self.env)
        return out.strip()

    def new_thread(self, title):
        return http_json("POST", f"{self.url}/api/threads", self.user, {"title": title})["id"]

    def stop(self):
        """Stops this server and removes its data folder."""
        self.proc.kill()
        self.proc.wait()
        CHILDREN.remove(self.proc)
        shutil.rmtree(self.data, ignore_errors=True)


class Nginx:
    def __init__(self, work):
        self.dir = os.path.join(work, "nginx")
        self.root = os.path.join(self.dir, "root")
        for d in ("root/static", "root/dav", "tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi", "logs"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.addr = f"127.0.0.1:{self.port}"
        conf = os.path.join(self.dir, "nginx.conf")
        self.nchan = os.path.exists(NCHAN_MODULE)
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(
                dir=self.dir, port=self.port,
                nchan_module=f"load_module {NCHAN_MODULE};" if self.nchan else "",
                nchan_locations=NCHAN_LOCATIONS if self.nchan else "",
            ))
        self.proc = start(
            ["nginx", "-p", self.dir, "-c", conf, "-e", os.path.join(self.dir, "logs", "error.log")],
            os.path.join(work, "nginx.log"),
        )
        wait_port(self.port, self.proc, "nginx")

    @property
    def pid(self):
        return self.proc.pid


# Static files with sendfile; WebDAV PUT into /dav/ (the body is spooled to tmp/body, on the
# same file system, then renamed into place, as nginx does). Access logging off, like ferry's
# default log level, so neither side pays for a log line per request.
NGINX_CONF = """\
{nchan_module}
daemon off;
master_process on;
worker_processes auto;
user root;
pid {dir}/nginx.pid;
error_log {dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    default_type application/octet-stream;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {dir}/root;
        location /dav/ {{
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
        }}
{nchan_locations}
    }}
}}
"""

# The events peer: nchan (Debian's libnginx-mod-nchan), publishing each POSTed body to the
# channel's SSE subscribers. A channel per round (`?ch=`), and subscribers start at the newest
# message, so no round sees another's.
NCHAN_MODULE = "/usr/lib/nginx/modules/ngx_nchan_module.so"
NCHAN_LOCATIONS = """\
        location = /nchan/pub {
            nchan_publisher;
            nchan_channel_id $arg_ch;
        }
        location = /nchan/sub {
            nchan_subscriber eventsource;
            nchan_channel_id $arg_ch;
            nchan_subscriber_first_message newest;
        }"""


class S3:
    """s3s-fs: an S3 server (the s3s crate's reference file-system backend) on local disk.
    Without credentials it takes unsigned requests only; with them, SigV4-signed ones only."""

    BUCKET = "bench"

    def __init__(self, binary, work, access_key=None, secret_key=None):
        name = "s3s-fs-sigv4" if access_key else "s3s-fs"
        self.root = os.path.join(work, "s3v4-data" if access_key else "s3-data")
        os.makedirs(self.root, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.access_key, self.secret_key = access_key, secret_key
        creds = ["--access-key", access_key, "--secret-key", secret_key] if access_key else []
        self.proc = start(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), *creds, self.root],
            os.path.join(work, f"{name}.log"),
            env={**os.environ, "RUST_LOG": "warn"},
        )
        wait_port(self.port, self.proc, name)
        if not access_key:
            status, body = http("PUT", f"{self.url}/{self.BUCKET}")
            if status != 200:
                raise BenchError(f"s3s-fs CreateBucket answered {status}: {body[:300]!r}")

    @property
    def pid(self):
        return self.proc.pid


class S3Side:
    """One S3 endpoint as the S3 workloads reach it: a boto3 client (setup, and the multipart
    upload) and URLs for wrk and curl, presigned with botocore's SigV4 query signer (the signer
    behind boto3's generate_presigned_url, without the client's per-call overhead), or plain
    when the side takes unsigned requests."""

    REGION = "us-east-1"

    def __init__(self, name, endpoint, bucket, pid=None, access_key=None, secret_key=None):
        self.name, self.endpoint, self.bucket, self.pid = name, endpoint, bucket, pid
        self.access_key, self.secret_key = access_key, secret_key
        self._client = None
        self._auth = None

    def client(self):
        if self._client is None:
            import boto3
            from botocore import UNSIGNED
            from botocore.config import Config

            self._client = boto3.client(
                "s3", endpoint_url=self.endpoint, region_name=self.REGION,
                aws_access_key_id=self.access_key or "-", aws_secret_access_key=self.secret_key or "-",
                config=Config(
                    signature_version="s3v4" if self.access_key else UNSIGNED,
                    s3={"addressing_style": "path"}, max_pool_connections=16,
                    retries={"max_attempts": 1},
                ),
            )
        return self._client

    def url(self, key, method="GET"):
        """The full URL of KEY, presigned for METHOD (valid 6 h) unless the side is unsigned."""
        url = f"{self.endpoint}/{self.bucket}/{urllib.parse.quote(key)}"
        if not self.access_key:
            return url
        if self._auth is None:
            from botocore.auth import S3SigV4QueryAuth
            from botocore.credentials import Credentials

            self._auth = S3SigV4QueryAuth(
                Credentials(self.access_key, self.secret_key), "s3", self.REGION, expires=6 * 3600
            )
        from botocore.awsrequest import AWSRequest

        req = AWSRequest(method=method, url=url)
        self._auth.add_auth(req)
        return req.url

    def put_url_file(self, path, prefix, count):
        """Writes COUNT PUT URLs (path?query, for bench.lua) to distinct keys under PREFIX."""
        with open(path, "w") as f:
            for i in range(count):
                u = urllib.parse.urlsplit(self.url(f"{prefix}/{i:08d}.bin", "PUT"))
                f.write(f"{u.path}?{u.query}\n" if u.query else f"{u.path}\n")
        return path


def s3_sides(ctx, unsigned=False):
    """ferry's S3 door and s3s-fs, both signing with SigV4 (an access key from POST /api/s3/keys
    for ferry, s3s-fs's own --access-key); with UNSIGNED, the unsigned s3s-fs as a reference."""
    if "s3_sides" not in ctx:
        ferry, peer = ctx["ferry"], ctx["s3v4"]
        key = http_json("POST", f"{ferry.url}/api/s3/keys", ferry.user)
        ctx["s3_sides"] = [
            S3Side("ferry", f"{ferry.url}/s3", "s3bench", ferry.pid, key["accessKeyId"], key["secretAccessKey"]),
            S3Side("s3s-fs", peer.url, S3.BUCKET, peer.pid, peer.access_key, peer.secret_key),
        ]
        for side in ctx["s3_sides"]:
            side.client().create_bucket(Bucket=side.bucket)
    sides = list(ctx["s3_sides"])
    if unsigned:
        sides.append(S3Side("s3s-fs unsigned", ctx["s3"].url, S3.BUCKET, ctx["s3"].pid))
    return sides
