//! Load clients for `bench/run` that need more than wrk or curl can do:
//!
//! - `events`: opens N SSE subscriptions to one thread, posts messages one at a time and
//!   records when each subscriber receives each message (POST → SSE receipt latency); with
//!   `--sub`/`--pub` instead of `--thread`, the same against any server that publishes a POSTed
//!   body to SSE subscribers (nchan, the peer);
//! - `seed`: writes N small files into a space with C concurrent keep-alive connections;
//! - `list`: walks a recursive listing through its cursor, timing the first page and the whole;
//! - `fanout`: not a client but the floor for `events`: a server that does nothing but write
//!   each POSTed body to every SSE subscriber (`fanout.rs`).
//!
//! A small hand-written HTTP/1.1 client over tokio keeps the client's own cost low and
//! predictable (no connection pool, no TLS, no JSON parsing). Every result is printed as one
//! JSON line on stdout.
//!
//! Why one file: the three workloads are short loops over the one hand-written HTTP/1.1 client
//! they share, and what each figure includes (a connection per task, no pool, no JSON parsing, the
//! client's own CPU) is set by that client and the loop together, so a figure's meaning is checked
//! in one place; the floor server, which shares nothing with them, is a module of its own.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

mod fanout;

type Conn = BufReader<TcpStream>;

fn usage() -> ! {
    eprintln!(
        "usage:\n  probe events --addr HOST:PORT --token T --thread ID --subscribers N --messages M\n  \
         probe events --addr HOST:PORT --sub PATH --pub PATH --subscribers N --messages M\n  \
         probe seed   --addr HOST:PORT --token T --space S --prefix P --count N [--concurrency C] [--size BYTES]\n  \
         probe list   --addr HOST:PORT --token T --space S [--limit L]\n  \
         probe fanout --addr HOST:PORT [--writers N]"
    );
    std::process::exit(2)
}

struct Args(Vec<String>);

impl Args {
    fn get(&self, name: &str) -> Option<String> {
        let flag = format!("--{name}");
        self.0
            .iter()
            .position(|a| *a == flag)
            .and_then(|i| self.0.get(i + 1).cloned())
    }
    fn need(&self, name: &str) -> String {
        self.get(name).unwrap_or_else(|| {
            eprintln!("probe: --{name} is required");
            usage()
        })
    }
    fn num(&self, name: &str, default: usize) -> usize {
        self.get(name)
            .map(|v| {
                v.parse().unwrap_or_else(|_| {
                    eprintln!("probe: --{name} must be a number");
                    usage()
                })
            })
            .unwrap_or(default)
    }
}

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        usage();
    }
    let cmd = argv.remove(0);
    let args = Args(argv);
    if cmd == "fanout" {
        if let Err(e) = fanout::serve(&args.need("addr"), args.num("writers", 2)) {
            eprintln!("probe fanout: {e}");
            std::process::exit(1);
        }
        return;
    }
    let threads = args.num("threads", 2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = rt.block_on(async {
        match cmd.as_str() {
            "events" => events(&args).await,
            "seed" => seed(&args).await,
            "list" => list(&args).await,
            _ => usage(),
        }
    });
    match result {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("probe {cmd}: {e}");
            std::process::exit(1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1, just enough

async fn connect(addr: &str) -> io::Result<Conn> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(BufReader::with_capacity(64 * 1024, stream))
}

struct Head {
    status: u16,
    content_length: Option<usize>,
    chunked: bool,
}

async fn read_head(conn: &mut Conn) -> io::Result<Head> {
    let mut line = String::new();
    let mut head = Head {
        status: 0,
        content_length: None,
        chunked: false,
    };
    let mut first = true;
    loop {
        line.clear();
        if conn.read_line(&mut line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed before the response head",
            ));
        }
        let l = line.trim_end();
        if first {
            first = false;
            head.status = l
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| io::Error::other(format!("bad status line: {l}")))?;
            continue;
        }
        if l.is_empty() {
            return Ok(head);
        }
        if let Some((name, value)) = l.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                head.content_length = value.parse().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding")
                && value.eq_ignore_ascii_case("chunked")
            {
                head.chunked = true;
            }
        }
    }
}

/// Reads one chunk of a chunked body into `out`; returns its size (0 = the last chunk).
async fn read_chunk(conn: &mut Conn, out: &mut Vec<u8>) -> io::Result<usize> {
    let mut line = String::new();
    if conn.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed inside a chunked body",
        ));
    }
    let size_text = line.trim_end().split(';').next().unwrap_or("");
    let size = usize::from_str_radix(size_text, 16)
        .map_err(|_| io::Error::other(format!("bad chunk size line: {line:?}")))?;
    let start = out.len();
    out.resize(start + size, 0);
    conn.read_exact(&mut out[start..]).await?;
    let mut crlf = [0u8; 2];
    conn.read_exact(&mut crlf).await?;
    if size == 0 {
        // Trailers are never sent by the servers measured here; the CRLF read above ends it.
    }
    Ok(size)
}

/// Sends a request and reads the whole answer.
async fn request(conn: &mut Conn, head: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let stream = conn.get_mut();
    if body.is_empty() {
        stream.write_all(head.as_bytes()).await?;
    } else {
        let mut buf = Vec::with_capacity(head.len() + body.len());
        buf.extend_from_slice(head.as_bytes());
        buf.extend_from_slice(body);
        stream.write_all(&buf).await?;
    }
    let h = read_head(conn).await?;
    let mut out = Vec::new();
    if h.chunked {
        while read_chunk(conn, &mut out).await? > 0 {}
    } else if let Some(n) = h.content_length {
        out.resize(n, 0);
        conn.read_exact(&mut out).await?;
    }
    Ok((h.status, out))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(name: &str, mut xs: Vec<f64>) -> String {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    format!(
        "\"{name}\":{{\"n\":{},\"p50_ms\":{:.3},\"p90_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3}}}",
        xs.len(),
        percentile(&xs, 50.0),
        percentile(&xs, 90.0),
        percentile(&xs, 99.0),
        xs.last().copied().unwrap_or(f64::NAN),
    )
}

// ---------------------------------------------------------------------------------------------
// events

const NOT_YET: u64 = u64::MAX;

/// Where the events workload subscribes and publishes: a ferry thread, or a peer's paths.
struct EventPaths {
    /// The subscription's path (with its query).
    sub: String,
    /// Where a message is POSTed.
    publish: String,
    /// `Authorization` and `Content-Type` lines for the POST (and the first for the GET).
    auth: String,
    content_type: &'static str,
    /// Whether the message is ferry's JSON `{"text": …}` or the body itself.
    json: bool,
}

async fn event_paths(args: &Args, addr: &str) -> io::Result<EventPaths> {
    let auth = args
        .get("token")
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let Some(thread) = args.get("thread") else {
        return Ok(EventPaths {
            sub: args.need("sub"),
            publish: args.need("pub"),
            auth,
            content_type: "text/plain",
            json: false,
        });
    };
    // Every subscriber starts after the last event already in the thread, so the replay is
    // empty.
    let mut conn = connect(addr).await?;
    let (status, body) = request(
        &mut conn,
        &format!(
            "GET /api/threads/{thread}/events?format=json&after=0&limit=1000 HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n"
        ),
        b"",
    )
    .await?;
    if status != 200 {
        return Err(io::Error::other(format!("event list answered {status}")));
    }
    let after = last_event_id(&body);
    Ok(EventPaths {
        sub: format!("/api/threads/{thread}/events?after={after}"),
        publish: format!("/api/threads/{thread}/messages"),
        auth,
        content_type: "application/json",
        json: true,
    })
}

async fn events(args: &Args) -> io::Result<String> {
    let addr = args.need("addr");
    let subscribers = args.num("subscribers", 1).max(1);
    let messages = args.num("messages", 100).max(1);
    let gap = Duration::from_millis(args.num("gap-ms", 20) as u64);
    let timeout = Duration::from_millis(args.num("timeout-ms", 5000) as u64);

    let base = Instant::now();
    // received[s * messages + k]: nanoseconds since `base` when subscriber s saw message k.
    let received: Arc<Vec<AtomicU64>> = Arc::new(
        (0..subscribers * messages)
            .map(|_| AtomicU64::new(NOT_YET))
            .collect(),
    );
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new((0..messages).map(|_| AtomicUsize::new(0)).collect());
    let ready = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));

    let paths = Arc::new(event_paths(args, &addr).await?);
    let mut conn = connect(&addr).await?;

    let mut tasks = Vec::with_capacity(subscribers);
    for s in 0..subscribers {
        let (addr, paths) = (addr.clone(), paths.clone());
        let (received, counts, ready, failed) = (
            received.clone(),
            counts.clone(),
            ready.clone(),
            failed.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let run = async {
                let mut conn = connect(&addr).await?;
                let head = format!(
                    "GET {} HTTP/1.1\r\nHost: {addr}\r\n{}Accept: text/event-stream\r\n\r\n",
                    paths.sub, paths.auth
                );
                conn.get_mut().write_all(head.as_bytes()).await?;
                let h = read_head(&mut conn).await?;
                if h.status != 200 {
                    return Err(io::Error::other(format!(
                        "subscription answered {}",
                        h.status
                    )));
                }
                ready.fetch_add(1, Ordering::SeqCst);
                let mut buf = Vec::with_capacity(8192);
                let mut seen = 0usize;
                while seen < messages {
                    // A chunked stream (ferry) or one that runs until the connection closes
                    // (nchan).
                    let got = if h.chunked {
                        read_chunk(&mut conn, &mut buf).await?
                    } else {
                        let mut block = [0u8; 8192];
                        let n = conn.read(&mut block).await?;
                        buf.extend_from_slice(&block[..n]);
                        n
                    };
                    if got == 0 {
                        return Err(io::Error::other("the event stream ended"));
                    }
                    let at = base.elapsed().as_nanos() as u64;
                    // Whole events end with a blank line.
                    while let Some(end) = find(&buf, b"\n\n") {
                        if let Some(k) = marker(&buf[..end])
                            && k < messages
                            && received[s * messages + k].load(Ordering::Relaxed) == NOT_YET
                        {
                            received[s * messages + k].store(at, Ordering::Relaxed);
                            counts[k].fetch_add(1, Ordering::SeqCst);
                            seen += 1;
                        }
                        buf.drain(..end + 2);
                    }
                }
                io::Result::Ok(())
            };
            if let Err(e) = run.await
                && failed.fetch_add(1, Ordering::SeqCst) < 3
            {
                eprintln!("probe events: subscriber {s}: {e}");
            }
        }));
        // Open the streams a few at a time so the listener's backlog never overflows.
        if s % 64 == 63 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while ready.load(Ordering::SeqCst) + failed.load(Ordering::SeqCst) < subscribers {
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "only {} of {subscribers} subscriptions opened",
                ready.load(Ordering::SeqCst)
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if failed.load(Ordering::SeqCst) > 0 {
        return Err(io::Error::other("some subscriptions failed"));
    }
    // Let the server's subscriber tasks reach their live wait, and tell the harness that the
    // subscriptions are open and idle (it reads the server's memory then).
    tokio::time::sleep(Duration::from_millis(200)).await;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "subscribed")?;
        out.flush()?;
    }
    tokio::time::sleep(Duration::from_millis(args.num("idle-ms", 300) as u64)).await;

    let mut sent = vec![0u64; messages];
    let mut lost = 0usize;
    let cpu_before = own_cpu_seconds();
    for k in 0..messages {
        let body = if paths.json {
            format!("{{\"text\":\"bench#{k}#\"}}")
        } else {
            format!("bench#{k}#")
        };
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {addr}\r\n{}Content-Type: {}\r\nContent-Length: {}\r\n\r\n",
            paths.publish,
            paths.auth,
            paths.content_type,
            body.len()
        );
        sent[k] = base.elapsed().as_nanos() as u64;
        let (status, answer) = request(&mut conn, &head, body.as_bytes()).await?;
        if !(200..300).contains(&status) {
            return Err(io::Error::other(format!(
                "posting a message answered {status}: {}",
                String::from_utf8_lossy(&answer)
            )));
        }
        let wait_until = Instant::now() + timeout;
        while counts[k].load(Ordering::SeqCst) < subscribers {
            if Instant::now() > wait_until {
                lost += subscribers - counts[k].load(Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        tokio::time::sleep(gap).await;
    }
    // The client's own cost of the messages (its reads of every subscriber's stream), so that a
    // server's figure can be read against what the client takes of the same two cores.
    let client_cpu_ms = (own_cpu_seconds() - cpu_before) * 1e3 / messages as f64;
    for t in tasks {
        t.abort();
    }

    let mut all = Vec::with_capacity(subscribers * messages);
    let mut first_sub = Vec::with_capacity(messages);
    let mut last_of = Vec::with_capacity(messages);
    for k in 0..messages {
        let mut slowest = 0u64;
        for s in 0..subscribers {
            let at = received[s * messages + k].load(Ordering::Relaxed);
            if at == NOT_YET {
                continue;
            }
            let ms = at.saturating_sub(sent[k]) as f64 / 1e6;
            all.push(ms);
            if s == 0 {
                first_sub.push(ms);
            }
            slowest = slowest.max(at);
        }
        if slowest > 0 {
            last_of.push(slowest.saturating_sub(sent[k]) as f64 / 1e6);
        }
    }
    Ok(format!(
        "{{\"subscribers\":{subscribers},\"messages\":{messages},\"lost\":{lost},\"client_cpu_ms_per_message\":{client_cpu_ms:.3},{},{},{}}}",
        summary("all", all),
        summary("designated", first_sub),
        summary("last", last_of)
    ))
}

/// User and system CPU time of this process so far, every thread (`/proc/self/stat`, in clock
/// ticks of 1/100 s: the message phase lasts seconds, so the tick is fine enough).
fn own_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; what follows the name starts at field 3.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The k of a `bench#k#` marker in an event.
fn marker(event: &[u8]) -> Option<usize> {
    let at = find(event, b"bench#")? + 6;
    let rest = &event[at..];
    let end = rest.iter().position(|&b| b == b'#')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// The largest `"id":N` in a JSON list of events.
fn last_event_id(body: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(body);
    let mut last = 0;
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("\"id\":") {
        rest = &rest[i + 5..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(n) = digits.parse::<u64>() {
            last = last.max(n);
        }
    }
    last
}

// ---------------------------------------------------------------------------------------------
// seed

async fn seed(args: &Args) -> io::Result<String> {
    let addr = args.need("addr");
    let token = args.need("token");
    let space = args.need("space");
    let prefix = args.need("prefix");
    let count = args.num("count", 1000);
    let concurrency = args.num("concurrency", 32).max(1);
    let size = args.num("size", 64);
    let next = Arc::new(AtomicUsize::new(0));
    let body: Arc<Vec<u8>> = Arc::new((0..size).map(|i| b'a' + (i % 26) as u8).collect());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (addr, token, space, prefix, next, body) = (
            addr.clone(),
            token.clone(),
            space.clone(),
            prefix.clone(),
            next.clone(),
            body.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut conn = connect(&addr).await?;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return io::Result::Ok(());
                }
                let head = format!(
                    "PUT /api/spaces/{space}/files/{prefix}/{:03}/{i:06}.txt HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                    i / 1000,
                    body.len()
                );
                let (status, answer) = request(&mut conn, &head, &body).await?;
                if !(200..300).contains(&status) {
                    return Err(io::Error::other(format!(
                        "PUT answered {status}: {}",
                        String::from_utf8_lossy(&answer)
                    )));
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(io::Error::other)??;
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(format!(
        "{{\"count\":{count},\"seconds\":{secs:.3},\"rps\":{:.1}}}",
        count as f64 / secs
    ))
}

// ---------------------------------------------------------------------------------------------
// list

async fn list(args: &Args) -> io::Result<String> {
    let addr = args.need("addr");
    let token = args.need("token");
    let space = args.need("space");
    let limit = args.num("limit", 1000);
    let mut conn = connect(&addr).await?;
    let started = Instant::now();
    let mut first_ms = 0.0;
    let mut pages = 0usize;
    let mut entries = 0usize;
    let mut bytes = 0usize;
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("recursive=true&limit={limit}&cursor={c}"),
            None => format!("recursive=true&limit={limit}"),
        };
        let head = format!(
            "GET /api/spaces/{space}/files?{query} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
        );
        let (status, body) = request(&mut conn, &head, b"").await?;
        if status != 200 {
            return Err(io::Error::other(format!(
                "listing answered {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        pages += 1;
        bytes += body.len();
        if pages == 1 {
            first_ms = started.elapsed().as_secs_f64() * 1e3;
        }
        let text = String::from_utf8_lossy(&body);
        entries += text.matches("\"path\":").count();
        cursor = text.find("\"nextCursor\":\"").map(|i| {
            let rest = &text[i + 14..];
            rest[..rest.find('"').unwrap_or(rest.len())].to_owned()
        });
        if cursor.is_none() {
            break;
        }
    }
    let total_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(format!(
        "{{\"first_page_ms\":{first_ms:.3},\"total_ms\":{total_ms:.3},\"pages\":{pages},\"entries\":{entries},\"bytes\":{bytes}}}"
    ))
}
