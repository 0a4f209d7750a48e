//! The kernel's TCP counters over a repetition (`/proc/net/netstat` and
//! `/proc/net/snmp`): what happened to connections the processes never
//! see, such as SYNs dropped because a listener's accept queue was full and
//! sent again seconds later; and UDP's datagrams dropped for a full
//! receive buffer, which its clients count lost. They count the whole network namespace, so
//! they are a repetition's own only while nothing else connects here.

use std::collections::HashMap;

use model::results::TcpStats;

/// The counters now.
pub fn read() -> Result<TcpStats, String> {
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    parse(&read("/proc/net/netstat")?, &read("/proc/net/snmp")?)
}

/// The counters in the two files' text: each a header line of names and
/// a line of values per group (`TcpExt: ...`, `Tcp: ...`).
fn parse(netstat: &str, snmp: &str) -> Result<TcpStats, String> {
    let mut values = HashMap::new();
    for text in [netstat, snmp] {
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let [names, numbers] = pair else { continue };
            let (Some((group, names)), Some((_, numbers))) =
                (names.split_once(':'), numbers.split_once(':'))
            else {
                continue;
            };
            for (name, number) in names.split_whitespace().zip(numbers.split_whitespace()) {
                if let Ok(number) = number.parse::<u64>() {
                    values.insert(format!("{group}:{name}"), number);
                }
            }
        }
    }
    let get = |key: &str| {
        values
            .get(key)
            .copied()
            .ok_or_else(|| format!("the kernel reports no {key}"))
    };
    Ok(TcpStats {
        listen_overflows: get("TcpExt:ListenOverflows")?,
        listen_drops: get("TcpExt:ListenDrops")?,
        syn_retransmits: get("TcpExt:TCPSynRetrans")?,
        retransmitted_segments: get("Tcp:RetransSegs")?,
        active_opens: get("Tcp:ActiveOpens")?,
        passive_opens: get("Tcp:PassiveOpens")?,
        udp_receive_buffer_errors: Some(get("Udp:RcvbufErrors")?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans\n\
                           TcpExt: 0 3814 3820 6236\n\
                           IpExt: InNoRoutes\n\
                           IpExt: 0\n";
    const SNMP: &str = "Ip: Forwarding DefaultTTL\n\
                        Ip: 1 64\n\
                        Tcp: RtoAlgorithm ActiveOpens PassiveOpens RetransSegs\n\
                        Tcp: 1 10000 9990 7001\n\
                        Udp: InDatagrams NoPorts InErrors RcvbufErrors\n\
                        Udp: 24516300 16 659 659\n";

    #[test]
    fn the_counters_are_read_by_name_from_both_files() {
        let stats = parse(NETSTAT, SNMP).unwrap();
        assert_eq!(
            stats,
            TcpStats {
                listen_overflows: 3814,
                listen_drops: 3820,
                syn_retransmits: 6236,
                retransmitted_segments: 7001,
                active_opens: 10000,
                passive_opens: 9990,
                udp_receive_buffer_errors: Some(659),
            }
        );
        let quiet = stats.since(&stats);
        assert_eq!(
            quiet,
            TcpStats {
                udp_receive_buffer_errors: Some(0),
                ..TcpStats::default()
            }
        );
        assert_eq!(quiet.troubles(), None);
        assert!(
            stats
                .troubles()
                .unwrap()
                .contains("3814 listen-queue overflows")
        );
    }

    #[test]
    fn a_missing_counter_is_named() {
        let e = parse("TcpExt: ListenOverflows\nTcpExt: 1\n", SNMP).unwrap_err();
        assert_eq!(e, "the kernel reports no TcpExt:ListenDrops");
    }

    #[test]
    fn this_kernel_has_them() {
        read().unwrap();
    }
}
