//! A server on an async runtime, written once: its executors (one shared,
//! or one per thread), their accept loops, and each connection in the
//! server's shape; over HTTP and WebSocket, and over UDP.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;

use super::client::all_connections;
use super::handoff::Handoff;
use super::interface::{Accepted, AsyncRuntime, Executor, Io, Serving, Task, Udp};
use super::select;
use super::services::Lock;
use crate::knobs::Settings;
use crate::runtime::{Topology, on_threads};
use crate::server::{DatagramServer, Server, Shape, Web, accept_loop, answer};

/// The executor a server's shape needs: with a timer for the timeout
/// shape, with a blocking pool for the blocking shape.
fn executor(shape: Shape, threads: usize, thread: usize, knobs: &Settings) -> Executor {
    Executor {
        threads,
        thread,
        knobs: knobs.clone(),
        timer: shape == Shape::Timeout,
        blocking_pool: shape == Shape::Blocking,
    }
}

/// Runs `serve` on each executor of the runtime's topology, with the
/// listener that executor accepts on: one shared executor over all the
/// threads, or one on each thread with its own listener.
fn on_executors<R: AsyncRuntime, F>(
    mut listeners: Vec<TcpListener>,
    threads: usize,
    make: impl Fn(usize, usize) -> Executor + Sync,
    serve: impl Fn(R::Handle, TcpListener, usize) -> F + Sync,
) -> io::Result<()>
where
    F: Future<Output = io::Result<()>> + 'static,
{
    match R::TOPOLOGY {
        Topology::Shared => {
            let listener = listeners.pop().expect("one shared listener");
            R::block_on(&make(threads, 0), |handle| serve(handle, listener, threads))
        }
        Topology::PerThread => {
            let listeners = listeners.into_iter().enumerate().collect();
            on_threads("server", listeners, |(thread, listener)| {
                R::block_on(&make(1, thread), |handle| serve(handle, listener, 1))
            })
        }
    }
}

/// Serves TCP: every connection in the server's shape.
pub(super) fn tcp<R: AsyncRuntime>(server: Server) -> io::Result<()> {
    let Server {
        listeners,
        threads,
        echo,
        tls,
        knobs,
        ready,
        ..
    } = server;
    let shape = echo.shape;
    let lock = Arc::new(R::Mutex::new());
    let make = |threads, thread| executor(shape, threads, thread, &knobs);
    on_executors::<R, _>(listeners, threads, make, |handle, listener, threads| {
        let (echo, tls, lock) = (echo.clone(), tls.clone(), lock.clone());
        let (ready, knobs) = (ready.clone(), knobs.clone());
        // Inside the executor: the pool shape's workers start here.
        async move {
            let spawner = handle.clone();
            let spawn = move |helper| R::detach(R::spawn(&spawner, Task::helper(helper)));
            let serving = Arc::new(Serving {
                handoff: Handoff::start(echo.shape, threads, spawn),
                echo,
                handle: handle.clone(),
                tls,
                lock,
            });
            let listener = R::Io::listener(listener)?;
            if shape == Shape::Select {
                return select::serve(listener, serving, ready, threads).await;
            }
            let spawn = |stream| {
                let accepted = Accepted {
                    stream,
                    serving: serving.clone(),
                };
                R::detach(R::spawn(&handle, Task::serve(accepted)));
            };
            let accepting = accept_loop(&ready, async || R::Io::accept(&listener).await, spawn);
            R::accepting(&handle, &knobs, accepting).await
        }
    })
}

/// Serves HTTP or WebSocket: each connection to [`Web::serve`] as the
/// runtime's futures-io stream.
pub(super) fn web<R: AsyncRuntime>(server: Server) -> io::Result<()> {
    let web = Web::of(&server);
    let Server {
        listeners,
        threads,
        knobs,
        ready,
        ..
    } = server;
    let make = |threads, thread| executor(Shape::Echo, threads, thread, &knobs);
    on_executors::<R, _>(listeners, threads, make, |handle, listener, _| {
        let (ready, knobs, web) = (ready.clone(), knobs.clone(), web.clone());
        async move {
            let listener = R::Io::listener(listener)?;
            let accept = async || R::Io::futures_io(R::Io::accept(&listener).await?);
            let spawn = |stream| R::detach(R::spawn(&handle, Task::web(stream, web.clone())));
            R::accepting(&handle, &knobs, accept_loop(&ready, accept, spawn)).await
        }
    })
}

/// Serves UDP: every socket answers each datagram (one socket per thread;
/// a shared executor's as tasks of its own).
pub(super) fn udp<R: AsyncRuntime>(server: DatagramServer) -> io::Result<()> {
    let DatagramServer {
        sockets,
        threads,
        knobs,
        ready,
    } = server;
    match R::TOPOLOGY {
        Topology::Shared => {
            let executor = executor(Shape::Echo, threads, 0, &knobs);
            R::block_on(&executor, |handle| async move {
                let sockets: Vec<Udp<R>> = sockets
                    .into_iter()
                    .map(R::Io::udp)
                    .collect::<io::Result<_>>()?;
                let mut sockets = sockets.into_iter();
                all_connections(threads, || {
                    let socket = sockets.next().expect("a socket per thread");
                    R::spawn(&handle, Task::answer(ready.clone(), socket))
                })
                .await
            })
        }
        Topology::PerThread => {
            let sockets = sockets.into_iter().enumerate().collect();
            on_threads("server", sockets, |(thread, socket)| {
                let ready = ready.clone();
                let executor = executor(Shape::Echo, 1, thread, &knobs);
                R::block_on(&executor, |_| async move {
                    answer(ready, R::Io::udp(socket)?).await
                })
            })
        }
    }
}
