//! What the server's end-to-end tests share: the server run in-process on
//! 127.0.0.1:0, stopped (and drained) when the test ends.

use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use stampede_server::{Config, Server, Shutdown};

pub struct Running {
    pub addr: SocketAddr,
    pub shutdown: Shutdown,
    handle: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    pub fn start(config: Config) -> Running {
        let server = Server::bind(&["127.0.0.1:0".parse().unwrap()], config).unwrap();
        let addr = server.local_addrs()[0];
        let shutdown = Shutdown::new();
        let s = shutdown.clone();
        let handle = Some(std::thread::spawn(move || server.run(s)));
        Running {
            addr,
            shutdown,
            handle,
        }
    }

    /// A connection with a 5-second read timeout.
    #[allow(dead_code)]
    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// Triggers the shutdown and waits for the server to finish draining.
    pub fn stop(mut self) {
        self.shutdown.trigger();
        self.handle.take().unwrap().join().unwrap().unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}
