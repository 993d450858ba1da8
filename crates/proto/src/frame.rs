//! Frame limits, and reading one length-prefixed frame from an async stream (feature
//! `tokio`).

#[cfg(feature = "tokio")]
use tokio::io::{AsyncRead, AsyncReadExt};

#[cfg(feature = "tokio")]
use super::request::FRAME_HEADER_LEN;

/// Default largest request frame (value of the length prefix) a server accepts: 64 KiB.
/// The server announces its limit in [`ServerHello::max_frame`](crate::ServerHello); it
/// bounds requests only.
pub const DEFAULT_MAX_FRAME: u32 = 64 * 1024;

/// The largest response frame (value of the length prefix) a server sends, and the least
/// a client must accept: 16 MiB. The largest responses are a `STATS` answer (42 bytes per
/// entry, as many entries as the server allows) and a `MAP` answer (at most 569 376
/// bytes: [`MAX_PARTITIONS`](crate::MAX_PARTITIONS) partitions, [`MAX_NODES`](crate::MAX_NODES)
/// nodes, every name 255 bytes; about 45 KB with 4096 partitions and short names), both
/// far below it.
pub const MAX_RESPONSE_FRAME: u32 = 16 * 1024 * 1024;

/// Why no frame could be read. Any of these ends the connection: the stream can no longer
/// be split into frames.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the stream cleanly between frames.
    #[error("connection closed")]
    Closed,
    /// The length prefix exceeds the limit.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Announced length.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// The length prefix is smaller than the 9-byte header every frame carries.
    #[error("frame of {0} bytes is shorter than its header")]
    TooShort(u32),
    /// An I/O error (including EOF inside a frame).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one frame and returns its body (the bytes after the length prefix) in `buf`.
///
/// Not cancel-safe: if the future is dropped mid-frame the stream is out of sync, so
/// callers drop it only when they are about to close the connection.
///
/// Available with the `tokio` feature (on by default).
#[cfg(feature = "tokio")]
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: u32,
) -> Result<(), FrameError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Err(FrameError::Closed)
            } else {
                Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()))
            };
        }
        got += n;
    }
    let len = u32::from_le_bytes(len);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if (len as usize) < FRAME_HEADER_LEN {
        return Err(FrameError::TooShort(len));
    }
    buf.clear();
    buf.resize(len as usize, 0);
    r.read_exact(buf).await?;
    Ok(())
}
