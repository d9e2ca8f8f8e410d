//! `probe fanout`: the least any server can do for the events workload, measured with the same
//! `probe events` as ferry and nchan, so that their figures can be read against what this
//! machine allows.
//!
//! A `GET` is answered with an event-stream head (no chunking: the stream runs until the
//! connection closes) and its socket is kept under the query's `ch=`, by one of `--writers`
//! threads (default 2, one per core here) in turn. A `POST` to any path with a `ch=` hands its
//! body, framed once as an SSE event, to every writer thread; each writes it to its share of the
//! channel's sockets, one `write(2)` per socket in a loop, and the POST is answered `201` once
//! all have. Nothing is parsed beyond the request line and `Content-Length`, nothing is stored:
//! what is left is the loopback TCP sends that every server pays (one per subscriber and event,
//! spread over the cores as ferry's and nchan's are), and the client's reads.
//!
//! std threads and blocking sockets, no runtime: a socket kept idle costs nothing until an
//! event, and an event costs its sends and two thread wake-ups.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

/// One writer thread's share of the subscribers, by channel.
type Share = Arc<Mutex<HashMap<String, Vec<TcpStream>>>>;

/// An event for one channel, and where the writer says it has sent its share.
struct Job {
    channel: String,
    event: Arc<[u8]>,
    done: mpsc::Sender<()>,
}

struct Writers {
    shares: Vec<Share>,
    jobs: Vec<mpsc::Sender<Job>>,
    next: AtomicUsize,
}

impl Writers {
    fn start(n: usize) -> Arc<Writers> {
        let (mut shares, mut jobs) = (Vec::new(), Vec::new());
        for _ in 0..n.max(1) {
            let share = Share::default();
            let (tx, rx) = mpsc::channel::<Job>();
            let mine = share.clone();
            thread::spawn(move || {
                for job in rx {
                    // A subscriber whose socket refuses the event (the client went away) is
                    // dropped.
                    if let Some(sockets) = lock(&mine).get_mut(&job.channel) {
                        sockets.retain_mut(|s| s.write_all(&job.event).is_ok());
                    }
                    let _ = job.done.send(());
                }
            });
            shares.push(share);
            jobs.push(tx);
        }
        Arc::new(Writers {
            shares,
            jobs,
            next: AtomicUsize::new(0),
        })
    }

    fn subscribe(&self, channel: String, socket: TcpStream) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.shares.len();
        lock(&self.shares[i])
            .entry(channel)
            .or_default()
            .push(socket);
    }

    /// Answers once every writer has sent the event to its share.
    fn publish(&self, channel: &str, event: Arc<[u8]>) {
        let (done, finished) = mpsc::channel();
        for jobs in &self.jobs {
            let job = Job {
                channel: channel.to_string(),
                event: event.clone(),
                done: done.clone(),
            };
            jobs.send(job)
                .expect("writer threads run as long as the server");
        }
        for _ in &self.jobs {
            let _ = finished.recv();
        }
    }
}

pub fn serve(addr: &str, writers: usize) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    let writers = Writers::start(writers);
    for stream in listener.incoming() {
        let stream = stream?;
        stream.set_nodelay(true)?;
        let writers = writers.clone();
        thread::spawn(move || {
            if let Err(e) = connection(stream, &writers)
                && e.kind() != io::ErrorKind::UnexpectedEof
            {
                eprintln!("probe fanout: {e}");
            }
        });
    }
    Ok(())
}

/// Serves one connection's requests until it closes, or until it subscribes (its socket then
/// belongs to the channel and the thread ends).
fn connection(stream: TcpStream, writers: &Writers) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let Some((method, channel, length)) = read_request(&mut reader)? else {
            return Ok(());
        };
        if method == "GET" {
            out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n",
            )?;
            writers.subscribe(channel, out);
            return Ok(());
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let mut event = Vec::with_capacity(body.len() + 8);
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(&body);
        event.extend_from_slice(b"\n\n");
        writers.publish(&channel, event.into());
        out.write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")?;
    }
}

fn lock(share: &Share) -> MutexGuard<'_, HashMap<String, Vec<TcpStream>>> {
    share
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The method, the `ch=` of the query and the `Content-Length` of the next request; `None`
/// when the connection closed between requests.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<(String, String, usize)>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let target = words.next().unwrap_or_default();
    let channel = target
        .split_once('?')
        .and_then(|(_, query)| query.split('&').find_map(|kv| kv.strip_prefix("ch=")))
        .unwrap_or_default()
        .to_string();
    let mut length = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Ok(Some((method, channel, length)));
        }
        if let Some((name, value)) = l.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value
                .trim()
                .parse()
                .map_err(|_| io::Error::other(format!("bad Content-Length: {l}")))?;
        }
    }
}
