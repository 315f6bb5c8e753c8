"""`a2c serve --upstream URL`: Ask-to-Choose as an OpenAI-compatible server in front of another one.

The flags override the serve config file (`--config`), whose sections are a run config's answer settings
(`seed`, `variation`, `judges`, `entropy_judge`, `ask_to_choose`), `generator:` and `server:`. The upstream
key is read from an environment variable or a file and never printed; the client key (`--api-key` or
A2C_SERVE_API_KEY) likewise. SIGTERM drains: requests in flight are answered, then the process exits 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2c.cli.argtypes import RegistryNames, finite_number, whole_number
from a2c.common.errors import A2CError
from a2c.common.untrusted import is_blank

API_KEY_ENV = "A2C_SERVE_API_KEY"
UPSTREAM_KEY_FROM_FILE = "A2C_SERVE_UPSTREAM_KEY"  # where a key read from --upstream-key-file is kept


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="serve Ask-to-Choose as an OpenAI-compatible API in front of a model server",
        description="Answer OpenAI chat/completions requests by Ask-to-Choose over an upstream model: the "
        "response's content is the selected answer, its `a2c` field the candidates, rank replies and "
        "consistency. Concurrent requests are answered in one batched pass.",
        epilog="Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health "
        "(liveness), GET /ready (upstream reachable). A request may override the variation, the A2C settings "
        "and which of the server's judges to use in an `a2c` object of its body (the openai client's "
        "extra_body), e.g. {\"a2c\": {\"variation\": {\"temperatures\": [0.5]}}}, within --max-samples, "
        "--max-tokens and --max-calls, never the generator, upstream, keys, caches, templates or models; its "
        "`seed` is the A2C seed. SIGTERM: requests in flight are answered, then the server exits 0.")
    model = parser.add_argument_group("model")
    model.add_argument("--upstream", action="append", dest="upstreams", metavar="URL",
                       help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (repeatable: replicas, "
                       "served round-robin)")
    model.add_argument("--model", help="model name: the upstream's served name, or the in-process model "
                       "(default: the embedded SmolLM2-135M-Instruct)")
    model.add_argument("--model-alias", action="append", dest="model_aliases", metavar="NAME",
                       help="another name a request's `model` may give for the served model, e.g. gpt-4o "
                       "(repeatable; '*': any name). Without it a request naming another model gets 404 "
                       "model_not_found")
    model.add_argument("--backend", choices=RegistryNames("a2c.llm.config:BACKENDS"), metavar="BACKEND",
                       help="in-process backend instead of an upstream: %(choices)s (default: openai with "
                       "--upstream)")
    model.add_argument("--upstream-key-env", metavar="NAME",
                       help="environment variable holding the upstream's API key (default OPENAI_API_KEY)")
    model.add_argument("--upstream-key-file", type=Path, metavar="PATH",
                       help="file holding the upstream's API key (instead of --upstream-key-env)")
    model.add_argument("--timeout", type=finite_number(0.0, inclusive=False), metavar="SECONDS",
                       help="seconds per upstream HTTP attempt (default 120)")
    model.add_argument("--retries", type=whole_number(0), metavar="N",
                       help="retries of an upstream request after 429/5xx/connection errors/timeouts "
                       "(default 5, with exponential backoff)")
    model.add_argument("--concurrency", type=whole_number(1), metavar="N",
                       help="upstream requests in flight over all upstreams (default 8)")
    model.add_argument("--cache", type=Path, metavar="PATH",
                       help="SQLite request cache: a repeated prompt with the same seed is served from it "
                       "(default: no cache)")
    model.add_argument("--config", type=Path, metavar="YAML",
                       help="serve config: answer settings (seed, variation, judges, entropy_judge, "
                       "ask_to_choose as in a run config), `generator:` and `server:` sections; flags "
                       "override it")
    server = parser.add_argument_group("server")
    server.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--port", type=int, help="port to listen on (default 8100; 0: any free port)")
    server.add_argument("--api-key", metavar="KEY",
                        help=f"clients must send this bearer token (default: ${API_KEY_ENV}; "
                        "none: no auth). Prefer the environment variable: flags show in `ps`")
    server.add_argument("--batch-window", type=finite_number(0.0, inclusive=True), metavar="SECONDS",
                        help="how long the first waiting request waits for others to share its batched "
                        "pass (default 0.05)")
    server.add_argument("--max-batch", type=whole_number(1), metavar="N",
                        help="questions per batched pass; a full batch starts at once (default 64)")
    server.add_argument("--max-pending", type=whole_number(1), metavar="N",
                        help="requests queued or being answered; more get 429 with Retry-After "
                        "(default 256)")
    server.add_argument("--deadline", type=finite_number(0.0, inclusive=False), metavar="SECONDS",
                        help="per request, queue included; later: 504 saying what was done (default 600)")
    server.add_argument("--max-body", type=whole_number(1), metavar="BYTES",
                        help="largest request body; larger: 413 (default 1048576)")
    server.add_argument("--read-timeout", type=finite_number(0.0, inclusive=False), metavar="SECONDS",
                        help="a connection that sends no whole request head, or a request whose body does "
                        "not arrive, within this is dropped (default 10)")
    server.add_argument("--max-samples", type=whole_number(1), metavar="N",
                        help="most answers per temperature (variation.samples) a request may ask for; the "
                        "server's own settings are held to it too (default 16)")
    server.add_argument("--max-tokens", type=whole_number(1), metavar="N",
                        help="largest reply budget (the variation's and ask_to_choose's max_tokens) a "
                        "request may set (default 1024)")
    server.add_argument("--max-calls", type=whole_number(1), metavar="N",
                        help="most model calls one request's settings may cost, counted before any is made; "
                        "more: 400 (default 256)")
    decline = parser.add_argument_group("answer or decline")
    decline.add_argument("--calibration", type=Path, metavar="FILE",
                         help="calibration.json of `a2c calibrate`: each response's `a2c` field gets "
                         "`confidence` and `declined`, and the content is the A2C answer of the calibrated "
                         "source. It must come from a run of this model with these settings and judges "
                         "(refused at start-up otherwise); requests may not change those settings")
    decline.add_argument("--decline-text", metavar="TEXT",
                         help="with --calibration: answer this text instead of a declined answer (the "
                         "response keeps its shape and finish_reason)")
    server.add_argument("--log-requests", action="store_true", default=None,
                        help="put each request's question in its access-log line (default: method, path, "
                        "status, latency and model calls only)")
    parser.set_defaults(handler=_serve)


def _given(pairs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pairs.items() if v is not None}


def _upstream_key_env(args: argparse.Namespace) -> str | None:
    """The env var the openai backend reads the upstream key from; a key file is read into one."""
    if args.upstream_key_file is None:
        return args.upstream_key_env
    if args.upstream_key_env is not None:
        raise A2CError("give --upstream-key-env or --upstream-key-file, not both")
    from a2c.common.files import read_text

    key = read_text(args.upstream_key_file, A2CError, what="upstream key file").strip()
    if not key:
        raise A2CError(f"{args.upstream_key_file}: the upstream key file is empty")
    os.environ[UPSTREAM_KEY_FROM_FILE] = key
    return UPSTREAM_KEY_FROM_FILE


def serve_config(args: argparse.Namespace) -> Any:
    from a2c.serve.config import ServeConfigError, SettingsError, build_serve_config, read_serve_file
    from a2c.serve.per_request import check_limits

    file = read_serve_file(args.config) if args.config is not None else {}
    given = file.get("generator")
    generator_file: dict[str, Any] = given if isinstance(given, dict) else {}
    backend = args.backend or ("openai" if args.upstreams else None)
    if backend is None and not generator_file.get("backend"):
        raise A2CError("no model to serve: give --upstream URL (an OpenAI-compatible server) or "
                       "--backend NAME",
                       hint="e.g. a2c serve --upstream http://127.0.0.1:8080/v1 --model NAME")
    if args.upstreams and backend != "openai":
        raise A2CError(f"--upstream is for the openai backend, not --backend {backend}")
    generator = _given({"backend": backend, "model": args.model,
                        "base_urls": tuple(args.upstreams) if args.upstreams else None,
                        "api_key_env": _upstream_key_env(args), "timeout": args.timeout,
                        "max_retries": args.retries, "max_concurrency": args.concurrency,
                        "cache": args.cache})
    server = _given({"host": args.host, "port": args.port, "batch_window": args.batch_window,
                     "max_batch": args.max_batch, "max_pending": args.max_pending, "deadline": args.deadline,
                     "max_body_bytes": args.max_body, "read_timeout": args.read_timeout,
                     "max_samples": args.max_samples, "max_tokens": args.max_tokens,
                     "max_calls_per_request": args.max_calls, "log_requests": args.log_requests,
                     "model_aliases": tuple(args.model_aliases) if args.model_aliases else None})
    config = build_serve_config(file, generator, server, str(args.config or "flags"))
    try:  # what every request starts from must be something a request may ask for
        check_limits(config.defaults, config.server, "")
    except SettingsError as exc:
        raise ServeConfigError(f"{args.config or 'flags'}: {exc}",
                               hint="raise the server's limit (its flag or `server:` key) or lower the "
                               "setting") from None
    if args.decline_text is not None and args.calibration is None:
        raise A2CError("--decline-text needs --calibration (what decides to decline)")
    if args.decline_text is not None and is_blank(args.decline_text):
        raise A2CError("--decline-text is empty (or only invisible characters): give the text to answer")
    if args.calibration is not None:
        from a2c.qa.calibration import read_calibration
        from a2c.serve.config import with_calibration

        config = with_calibration(config, read_calibration(args.calibration), args.decline_text,
                                  f"--calibration {args.calibration}")
    return config


@contextmanager
def _sigterm_exits_cleanly() -> Iterator[None]:
    """uvicorn drains on SIGTERM, then raises the signal again against the handler it found: a handler of
    ours makes that a no-op, so a drained server exits 0 instead of dying of the signal."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a busy port is a one-line error. Its protocol is named: asyncio
    turns Nagle off only on sockets whose `proto` says TCP, and with Nagle on every response waited ~40 ms
    for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise A2CError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                       hint="another server may hold the port: pick another with --port") from None
    return sock


def _serve(args: argparse.Namespace) -> int:
    import logging

    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise A2CError(f"a2c serve needs FastAPI and uvicorn ({exc})",
                       hint="pip install 'a2c[serve]'") from None

    from a2c.llm import build_generator
    from a2c.llm.config import OpenAIConfig
    from a2c.serve.app import ACCESS_LOG, build_state, create_app
    from a2c.serve.slow_clients import head_deadline

    config = serve_config(args)
    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    generator = build_generator(config.generator)  # an in-process model loads here, before we listen
    state = build_state(config, generator, api_key=api_key)  # and the judges' models: a missing one fails now
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    access = logging.getLogger(ACCESS_LOG)
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False

    opts, gen = config.server, config.generator
    sock = _listen(opts.host, opts.port)
    host, port = sock.getsockname()[:2]
    if isinstance(gen, OpenAIConfig):
        where = ", ".join(gen.base_urls)
        keyed = os.environ.get(gen.api_key_env)
        key_note = f"upstream key from ${gen.api_key_env}" if keyed else "no upstream key"
    else:
        where, key_note = "in process", "no upstream key"
    print(f"a2c serve: http://{host}:{port}/v1 answers with {gen.backend}/{gen.model} ({where}; {key_note}); "
          f"batch window {opts.batch_window:g} s, max batch {opts.max_batch}, max pending "
          f"{opts.max_pending}, deadline {opts.deadline:g} s, client auth {'on' if api_key else 'off'}",
          file=sys.stderr, flush=True)
    if config.calibration is not None:
        cal = config.calibration
        rule = "every answer declined" if cal.decline_below is None else \
            f"declined below confidence {cal.decline_below:.3f} ({cal.rule})"
        print(f"a2c serve: answer or decline by {cal.signal} of the {cal.source} answers, {rule}",
              file=sys.stderr, flush=True)
    uvicorn_config = uvicorn.Config(create_app(state), log_level="warning", access_log=False, lifespan="on",
                                    timeout_graceful_shutdown=int(opts.deadline) + 5,
                                    http=head_deadline(opts.read_timeout))
    server = uvicorn.Server(uvicorn_config)
    with _sigterm_exits_cleanly():
        server.run(sockets=[sock])
    if not server.started:
        raise A2CError("the server did not start (see the error above)")
    print("a2c serve: stopped", file=sys.stderr, flush=True)
    return 0
