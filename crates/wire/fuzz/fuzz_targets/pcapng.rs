#![no_main]
//! The pcapng readers must never panic: the slice reader and the streaming
//! reader must read the same blocks from any bytes, and every packet that
//! reads must write and read back the same through the writer.

use libfuzzer_sys::fuzz_target;
use wire::pcapng::{self, Block, CapturedPacket, InterfaceId, PcapngReader, PcapngWriter};

/// Longest option value the writer writes.
const MAX_WRITTEN_OPTION: usize = u16::MAX as usize - 3;

fuzz_target!(|data: &[u8]| {
    let mut stream = PcapngReader::new(data);
    let mut writer = PcapngWriter::new(Vec::new(), "fuzz").expect("section header");
    // Per section: this section's interface ids to the writer's, with snap
    // lengths (`None`: a name too long for the writer, 65533 to 65535 bytes).
    let mut interfaces: Vec<Option<(InterfaceId, u32)>> = Vec::new();
    let mut written = Vec::new();
    let mut failed = false;
    for block in pcapng::blocks(data) {
        let streamed = stream.next_block();
        let block = match block {
            Ok(block) => block,
            Err(e) => {
                match streamed {
                    Err(pcapng::ReadError::Format(f)) => assert_eq!(f, e),
                    other => panic!("slice reader: {e}; stream reader: {other:?}"),
                }
                failed = true;
                break;
            }
        };
        assert_eq!(streamed.expect("the stream reads it too"), Some(block));
        match block {
            Block::SectionHeader(_) => interfaces.clear(),
            Block::InterfaceDescription(i) => {
                assert_eq!(i.id.0 as usize, interfaces.len());
                let name = i.name.unwrap_or("");
                let id = writer.add_interface_with_code(name, i.link_type, i.snap_len);
                assert_eq!(id.is_ok(), name.len() <= MAX_WRITTEN_OPTION);
                interfaces.push(id.ok().map(|id| (id, i.snap_len)));
            }
            Block::EnhancedPacket(p) => {
                assert!(p.data.len() <= p.original_len as usize);
                let Some((id, snap)) = interfaces[p.interface.0 as usize] else {
                    continue;
                };
                // The writer cuts to the snap length (the reader does not)
                // and refuses the longest comments.
                if (snap != 0 && p.data.len() > snap as usize)
                    || p.comment.is_some_and(|c| c.len() > MAX_WRITTEN_OPTION)
                {
                    continue;
                }
                writer
                    .write_packet(
                        id,
                        &CapturedPacket {
                            timestamp_ns: p.timestamp_ns,
                            data: p.data,
                            original_len: Some(p.original_len),
                            comment: p.comment,
                            direction: p.direction,
                        },
                    )
                    .expect("a read packet writes");
                written.push(p);
            }
            Block::Other { .. } => {}
        }
    }
    if !failed {
        assert!(matches!(stream.next_block(), Ok(None)));
    }
    let out = writer.into_inner().expect("flush");
    let again: Vec<_> = pcapng::blocks(&out)
        .map(|b| b.expect("written output reads"))
        .filter_map(|b| match b {
            Block::EnhancedPacket(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(again.len(), written.len());
    for (a, w) in again.iter().zip(&written) {
        assert_eq!(
            (
                a.timestamp_ns,
                a.data,
                a.original_len,
                a.comment,
                a.direction
            ),
            (
                w.timestamp_ns,
                w.data,
                w.original_len,
                w.comment,
                w.direction
            )
        );
    }
});
