"""The service in production, who may call it: a real `dedup-hbase serve` process and real
sockets. Every endpoint answers 401 without a token or with a wrong one, 403 with a token that
lacks its scope, 200 with one that has it (/healthz and /readyz to anyone); the tokens file is
read again on SIGHUP (a bad one keeps the tokens in force); a server on an address other than
loopback without tokens is refused at start unless --insecure; TLS with a certificate made
here, on the fast lane's path and the ASGI application's."""

import json
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time

import httpx
import pytest

from conftest import require_or_skip
from serving import started

READER, WRITER, DELETER, ALL = ("reader-token-0123456789", "writer-token-0123456789", "deleter-token-0123456789",
                                "all-scopes-token-0123456789")
TOKENS = f"""# the tests' tokens
{READER} read
{WRITER} write
  {DELETER}   delete

{ALL} read,write,delete
"""


def init(store: str) -> None:
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)


def bearer(token: str) -> dict:
    return {"authorization": f"Bearer {token}"}


DOC = [{"id": "n1", "text": "长江经济带生态环境保护发生了转折性变化"}]
# (method, path, body, the scope, a token with it, a token without it); in this order: add, read, delete
ENDPOINTS = [("POST", "/v1/add?if_new=true", DOC, "write", WRITER, READER),
             ("POST", "/v1/check", DOC, "read", READER, WRITER), ("GET", "/v1/docs/n1", None, "read", READER, DELETER),
             ("GET", "/v1/stats", None, "read", READER, WRITER), ("GET", "/metrics", None, "read", READER, DELETER),
             ("DELETE", "/v1/docs/n1", None, "delete", DELETER, READER)]


def test_every_endpoint_asks_for_its_scope(tmp_path):
    store, tokens = str(tmp_path / "index"), tmp_path / "tokens"
    init(store)
    tokens.write_text(TOKENS)
    with started(store, "--tokens", str(tokens), log=tmp_path / "serve.log") as (url, _), \
            httpx.Client(base_url=url, timeout=60) as client:
        for method, path, body, scope, allowed, lacking in ENDPOINTS:
            where = f"{method} {path.split('?')[0]}"
            for headers, status, error in [
                    ({}, 401, f"{where}: this needs a token with the scope {scope}: send the header Authorization: "
                              "Bearer TOKEN"),
                    (bearer("wrong-token-0123456789"), 401, f"{where}: unknown token"),
                    (bearer(ALL[:-1]), 401, f"{where}: unknown token"),  # a prefix of a token is no token
                    ({"authorization": f"Basic {ALL}"}, 401, f"{where}: the Authorization header is not 'Bearer TOKEN'"),
                    (bearer(lacking), 403, None)]:
                response = client.request(method, path, json=body, headers=headers)
                assert response.status_code == status, (method, path, headers, response.text)
                assert response.headers["content-type"] == "application/json"
                if status == 401:
                    assert response.headers["www-authenticate"] == "Bearer"
                    assert response.json() == {"error": error}
                else:
                    assert "www-authenticate" not in response.headers
                    assert response.json() == {"error": f"{where}: this token lacks the scope {scope}"}
            for token in (allowed, ALL):
                response = client.request(method, path, json=body, headers=bearer(token))
                if method == "DELETE" and token == ALL:  # deleted by the first
                    assert response.status_code == 404
                else:
                    assert response.status_code == 200, (method, path, response.text)
        for path, answer in (("/healthz", {"ok": True}), ("/readyz", {"ready": True})):  # a load balancer's
            assert client.get(path).json() == answer
            assert client.get(path, headers=bearer("wrong-token-0123456789")).json() == answer
        # a path or method no route has: 404 and 405 before any token is asked for
        assert client.get("/v1/nothing").status_code == 404 and client.put("/v1/check").status_code == 405


def raw(url: str, data: bytes, context: ssl.SSLContext | None = None) -> list[bytes]:
    """``data`` written to a new connection (TLS with ``context``); what each read of the
    connection returned until the answer was whole (one answer, by its content-length)."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as plain:
        sock = context.wrap_socket(plain, server_hostname=host) if context else plain
        sock.sendall(data)
        reads = []
        while True:
            reads.append(sock.recv(65536))
            got = b"".join(reads)
            head, sep, rest = got.partition(b"\r\n\r\n")
            assert reads[-1], got
            if sep and len(rest) >= int(re.search(rb"content-length: (\d+)", head).group(1)):
                return reads


def post(path: bytes, body: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"POST " + path + b" HTTP/1.1", b"host: x", b"content-length: %d" % len(body), *headers,
                         b"", body])


def test_a_refusal_is_the_same_bytes_on_the_lane_and_the_asgi_way(tmp_path):
    """A plain POST (the fast lane) and one the lane leaves to the ASGI application (a
    percent-escaped path) are refused alike: 401 with its challenge, 403."""
    store, tokens = str(tmp_path / "index"), tmp_path / "tokens"
    init(store)
    tokens.write_text(TOKENS)
    body = json.dumps(DOC).encode()
    with started(store, "--tokens", str(tokens), log=tmp_path / "serve.log") as (url, _):
        for headers, status in (((), b"401"), ((b"authorization: Bearer " + WRITER.encode(),), b"403"),
                                ((b"authorization: Bearer " + READER.encode(),), b"200")):
            plain = b"".join(raw(url, post(b"/v1/check", body, *headers)))
            escaped = b"".join(raw(url, post(b"/v1/%63heck", body, *headers)))
            mask = re.compile(rb"date: [^\r]*")
            assert mask.sub(b"-", plain) == mask.sub(b"-", escaped) and plain.startswith(b"HTTP/1.1 " + status), plain
            if status == b"401":
                assert b"\r\ncontent-type: application/json\r\nwww-authenticate: Bearer\r\n\r\n" in plain


def test_the_tokens_file_is_read_again_on_sighup(tmp_path):
    store, tokens, log = str(tmp_path / "index"), tmp_path / "tokens", tmp_path / "serve.log"
    init(store)
    first, second = "first-token-0123456789", "second-token-0123456789"
    tokens.write_text(f"{first} read\n")
    with started(store, "--tokens", str(tokens), log=log) as (url, proc), \
            httpx.Client(base_url=url, timeout=60) as client:
        def status(token: str) -> int:
            return client.get("/v1/stats", headers=bearer(token)).status_code

        def hup_and_wait_for(line: str) -> None:
            lines = log.read_text().count("\n")
            proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 60
            while log.read_text().count("\n") == lines:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            assert log.read_text().splitlines()[-1] == line

        assert (status(first), status(second)) == (200, 401)
        tokens.write_text(f"# rotated\n{second} read\n")
        hup_and_wait_for(f"SIGHUP: 1 tokens read from {tokens}")
        assert (status(first), status(second)) == (401, 200)  # the removed one refused, the added one taken
        tokens.write_text(f"{first} read\n{first[:8]} read\n")  # line 2: too short a token
        hup_and_wait_for(f"SIGHUP: kept the 1 tokens in force: tokens file {tokens}, line 2: a token is at least 16 "
                         "characters of letters, digits and -._~+/ (then = padding); this one is 8 characters")
        assert (status(first), status(second)) == (401, 200)  # nothing of the bad file taken
        tokens.unlink()
        hup_and_wait_for(f"SIGHUP: kept the 1 tokens in force: cannot read the tokens file {tokens}: [Errno 2] No "
                         f"such file or directory: '{tokens}'")
        assert status(second) == 200 and proc.poll() is None
    assert first not in log.read_text() and second not in log.read_text()


@pytest.mark.parametrize("content, message", [
    ("short read\n", "line 1: a token is at least 16 characters of letters, digits and -._~+/ (then = padding); "
                     "this one is 5 characters"),
    (f"# c\n\n{READER} read\n{READER} write\n", "line 4: this token was given on an earlier line already"),
    (f"{READER} read,admin\n", "line 1: unknown scope 'admin' (the scopes: read, write, delete, comma-separated)"),
    (f"{READER}\n", "line 1: a line is a token and its scopes (e.g. 'TOKEN read,write'), not 1 words"),
    (f"{READER}\" read\n", "line 1: a token is at least 16 characters of letters, digits and -._~+/ (then = padding); "
                           "this one is 24 characters with others among them"),
    ("# nothing\n\n", "holds no token (a line is a token and its scopes, e.g. 'TOKEN read,write')"),
])
def test_a_bad_tokens_file_stops_the_start_naming_its_line(tmp_path, content, message):
    store, tokens = str(tmp_path / "index"), tmp_path / "tokens"
    init(store)
    tokens.write_text(content)
    result = subprocess.run(["dedup-hbase", "serve", "--store", store, "--port", "0", "--tokens", str(tokens)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    separator = " " if message.startswith("holds") else ", "
    assert result.stderr == f"error: tokens file {tokens}{separator}{message}\n"
    assert READER not in result.stderr


def own_address() -> str | None:
    """This machine's own address other than loopback, if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # a UDP "connection" sends nothing: it picks the outgoing address
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_an_address_other_than_loopback_needs_tokens_or_insecure(tmp_path):
    store, tokens = str(tmp_path / "index"), tmp_path / "tokens"
    init(store)
    tokens.write_text(TOKENS)
    hosts = ["0.0.0.0", *filter(None, [own_address()])]
    for host in hosts:
        refused = subprocess.run(["dedup-hbase", "serve", "--store", store, "--host", host, "--port", "0"],
                                 capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1
        assert refused.stderr == (f"error: refusing to serve {host} without --tokens: anyone who can reach it could "
                                  "read, add and delete documents; give --tokens FILE, or --insecure to serve it open on "
                                  "purpose\n")
    for options in (["--insecure"], ["--tokens", str(tokens)]):
        with started(store, "--host", "0.0.0.0", *options, log=tmp_path / "serve.log") as (url, _):
            port = url.rsplit(":", 1)[1]
            assert url == f"http://0.0.0.0:{port}"
            answer = httpx.get(f"http://127.0.0.1:{port}/v1/stats", headers=bearer(READER), timeout=60)
            assert answer.status_code == 200
    for host in ("127.0.0.1", "localhost"):  # loopback: no token needed, the same line as ever
        with started(store, "--host", host, log=tmp_path / "serve.log") as (url, _):
            assert (tmp_path / "serve.log").read_text() == (
                f"serving {store} on {url} (POST /v1/check, POST /v1/add?if_new=true, GET|DELETE /v1/docs/ID, GET "
                "/v1/stats, GET /healthz); Ctrl-C stops\n")
            assert httpx.get(f"{url}/v1/stats", timeout=60).status_code == 200


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate file, key file)."""
    if shutil.which("openssl") is None:
        require_or_skip("openssl is not installed (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def test_tls_on_the_lane_and_the_asgi_way(tmp_path, certificate):
    """A client that verifies against the certificate gets answers (a plain POST: the fast
    lane; a percent-escaped one and a GET: the ASGI application), byte for byte as each other;
    a client that verifies against the system's authorities, and plain HTTP, get none. The
    lane writes its answer in one write, so one TLS record; the ASGI way in two (head, body):
    a TLS read returns one record at most, so the first read of an answer shows which way
    answered it, and proves the lane runs on uvicorn's TLS transport."""
    cert, key = certificate
    store, tokens = str(tmp_path / "index"), tmp_path / "tokens"
    init(store)
    tokens.write_text(TOKENS)
    with started(store, "--tokens", str(tokens), "--certfile", str(cert), "--keyfile", str(key),
                 log=tmp_path / "serve.log") as (url, _):
        assert url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(cert))
        with httpx.Client(base_url=url, timeout=60, verify=trusted) as client:
            added = client.post("/v1/add", json=DOC, headers=bearer(WRITER))
            assert added.status_code == 200 and added.json()[0]["added"]
            checked = client.post("/v1/check", json=DOC, headers=bearer(READER))
            assert [m["id"] for m in checked.json()[0]["matches"]] == ["n1"]
            assert client.get("/v1/docs/n1", headers=bearer(READER)).json()["id"] == "n1"
            assert client.get("/readyz").json() == {"ready": True}
        body, auth = json.dumps(DOC).encode(), b"authorization: Bearer " + READER.encode()
        lane, asgi = raw(url, post(b"/v1/check", body, auth), trusted), raw(url, post(b"/v1/%63heck", body, auth), trusted)
        mask = re.compile(rb"date: [^\r]*")
        assert mask.sub(b"-", b"".join(lane)) == mask.sub(b"-", b"".join(asgi))
        assert b"".join(lane).startswith(b"HTTP/1.1 200 OK\r\n") and b'"matches":[{"id":"n1"' in b"".join(lane)
        assert len(lane) == 1 and lane[0].endswith(b"]")  # one record: head and body
        assert asgi[0].endswith(b"\r\n\r\n")  # the head alone: the body came in a record of its own
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(f"{url}/healthz", timeout=60)  # the system's authorities know no such certificate
        with pytest.raises(httpx.TransportError):
            httpx.get(url.replace("https://", "http://") + "/healthz", timeout=60)
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as sock:  # plain HTTP bytes: no HTTP answer
            sock.sendall(post(b"/v1/check", body, auth))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert not answer.startswith(b"HTTP/")


def test_a_certificate_that_does_not_load_stops_the_start(tmp_path, certificate):
    cert, key = certificate
    store = str(tmp_path / "index")
    init(store)
    for options, start in ((["--certfile", str(tmp_path / "none.pem")], f"error: cannot load the certificate "
                                                                         f"{tmp_path / 'none.pem'}: [Errno 2]"),
                           (["--certfile", str(cert), "--keyfile", str(cert)], f"error: cannot load the certificate "
                                                                                f"{cert} and key {cert}: "),
                           (["--keyfile", str(key)], "error: --keyfile needs --certfile")):
        result = subprocess.run(["dedup-hbase", "serve", "--store", store, "--port", "0", *options],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and result.stderr.startswith(start) and result.stderr.count("\n") == 1, \
            result.stderr
