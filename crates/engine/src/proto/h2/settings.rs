//! What the client's side of an HTTP/2 connection offers the server (SETTINGS and
//! windows): h2load's `-w`, `-W`, `-f` and header table flags, with their defaults and
//! their checks.

use stampede_wire::frame::DEFAULT_MAX_FRAME as MAX_FRAME;

use crate::error::SpecError;

/// The receive window we open for the connection and for each stream by default.
pub(super) const WINDOW: u32 = 1 << 30;
/// The window every HTTP/2 connection and stream starts with (RFC 9113 §6.9.2).
pub(super) const INITIAL_WINDOW: u32 = 65_535;
/// The header table every HPACK context starts with (RFC 9113 §6.5.2).
pub(super) const DEFAULT_TABLE: u32 = 4096;

/// What the client's side of each HTTP/2 connection offers the server: its receive
/// windows, the largest frame it reads, and the HPACK tables (h2load's `-w`, `-W`,
/// `-f`, `--header-table-size`, `--encoder-header-table-size`). The defaults open
/// windows wide so that flow control never paces a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct H2Settings {
    /// Each stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE), at least 1.
    pub stream_window: u32,
    /// The connection's receive window, at least 1. Below 65,535 (where every
    /// connection starts) the difference is withheld from the first WINDOW_UPDATEs,
    /// as nghttp2 does, so the server's credit shrinks to it.
    pub connection_window: u32,
    /// The largest frame payload read (SETTINGS_MAX_FRAME_SIZE), 16,384 to 2^24-1.
    pub max_frame: u32,
    /// The HPACK table the server may fill for responses (SETTINGS_HEADER_TABLE_SIZE).
    pub header_table: u32,
    /// The most of the server's table the request's fields may take; fields that do
    /// not fit are sent as literals.
    pub encoder_table: u32,
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings {
            stream_window: WINDOW,
            connection_window: WINDOW,
            max_frame: MAX_FRAME as u32,
            header_table: DEFAULT_TABLE,
            encoder_table: DEFAULT_TABLE,
        }
    }
}

impl H2Settings {
    /// Why the settings cannot be used, if they cannot.
    pub fn check(&self) -> Result<(), SpecError> {
        let bad = |reason: String| {
            Err(SpecError::Invalid {
                field: "h2",
                reason,
            })
        };
        if self.stream_window == 0 || self.connection_window == 0 {
            return bad("a receive window of 0 bytes lets no response body through".into());
        }
        if self.stream_window > i32::MAX as u32 || self.connection_window > i32::MAX as u32 {
            return bad("a receive window may be at most 2^31-1 bytes (RFC 9113 §6.9.1)".into());
        }
        if !(MAX_FRAME as u32..1 << 24).contains(&self.max_frame) {
            return bad(format!(
                "the largest frame must be from 16,384 to 16,777,215 bytes (RFC 9113 §6.5.2), not {}",
                self.max_frame
            ));
        }
        Ok(())
    }
}
