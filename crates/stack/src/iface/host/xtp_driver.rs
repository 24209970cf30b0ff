//! The application's calls on XTP's character-driver interface (Taler
//! 1992 §3.4.2; `socket::xtp::driver`), beside the socket calls of
//! `xtp_api`: a write lends its buffer and is over once the peer's reader
//! took it; a read posts its buffer and is over once filled. Non-blocking
//! like every host call: a call whose answer is not there yet returns
//! [`XtpError::WouldBlock`], and the caller asks again.

use bytes::Bytes;

use super::xtp_api::{record_written, write_refusal, XtpError};
use super::Host;
use crate::probes::{
    RECV_QUEUE_DEQUEUE, SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, SOCKET_SEND_ENTER, SOCKET_SEND_EXIT,
};
use crate::socket::probe_len;
use crate::socket::xtp::XtpHandle;

impl Host {
    /// Starts a driver write of all of `data`: referenced, not copied
    /// (copied when shorter than
    /// [`DRIVER_COPY_BELOW`](crate::socket::xtp::driver::DRIVER_COPY_BELOW)).
    /// The association asks for delivery confirmations (DREQ) from now
    /// on. `WouldBlock` while the previous write is in progress.
    pub fn xtp_driver_write(&mut self, handle: XtpHandle, data: Bytes) -> Result<(), XtpError> {
        let (assoc, marks) = self.xtp_stream(handle)?;
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, assoc.flow(), || {
            (probe_len(data.len()), marks.written)
        });
        write_refusal(assoc)?;
        let len = data.len();
        if len == 0 {
            return Ok(());
        }
        if !assoc.driver_write(data) {
            return Err(XtpError::WouldBlock);
        }
        record_written(marks, assoc.flow(), len);
        self.xtp.output_pending = true;
        Ok(())
    }

    /// The length of the driver write in progress once the peer's reader
    /// took all of it and said so: the write is then over and its buffer
    /// released. `WouldBlock` before; `NotInProgress` when none is.
    pub fn xtp_driver_write_done(&mut self, handle: XtpHandle) -> Result<usize, XtpError> {
        let (assoc, _) = self.xtp_stream(handle)?;
        if let Some(len) = assoc.driver_write_done() {
            return Ok(len);
        }
        if let Some(error) = assoc.error() {
            return Err(XtpError::Association(error));
        }
        if !assoc.driver_writing() {
            return Err(XtpError::NotInProgress);
        }
        if assoc.peer_stopped_reading() {
            return Err(XtpError::PeerStoppedReading);
        }
        Err(XtpError::WouldBlock)
    }

    /// Posts `buf` for a driver read of `want` bytes (its contents are
    /// replaced; its allocation is reused). `WouldBlock` while a read is
    /// posted.
    pub fn xtp_driver_read(
        &mut self,
        handle: XtpHandle,
        buf: Vec<u8>,
        want: usize,
    ) -> Result<(), XtpError> {
        let (assoc, _) = self.xtp_stream(handle)?;
        if !assoc.driver_read(buf, want) {
            return Err(XtpError::WouldBlock);
        }
        // Bytes that waited were taken, and the reader's room may have
        // grown enough for an alloc update.
        self.xtp.output_pending = true;
        Ok(())
    }

    /// The posted buffer once the read is over, holding what it got:
    /// empty at the end of the peer's stream. `WouldBlock` before;
    /// `NotInProgress` when nothing is posted.
    pub fn xtp_driver_read_done(&mut self, handle: XtpHandle) -> Result<Vec<u8>, XtpError> {
        let (assoc, marks) = self.xtp_stream(handle)?;
        if !assoc.driver_reading() {
            return Err(XtpError::NotInProgress);
        }
        let _span = probe::span(
            SOCKET_RECV_ENTER,
            SOCKET_RECV_EXIT,
            0,
            assoc.flow(),
            marks.read,
        );
        if let Some(buf) = assoc.driver_read_done() {
            if let (true, Some(error)) = (buf.is_empty(), assoc.error()) {
                return Err(XtpError::Association(error));
            }
            if !buf.is_empty() {
                marks.read += buf.len() as u64;
                probe::record_with(RECV_QUEUE_DEQUEUE, assoc.flow(), || {
                    (probe_len(buf.len()), marks.read)
                });
            }
            self.xtp.output_pending = true;
            return Ok(buf);
        }
        match assoc.error() {
            Some(error) => Err(XtpError::Association(error)),
            None => Err(XtpError::WouldBlock),
        }
    }
}
