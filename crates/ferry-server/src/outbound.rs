//! Where the server may send requests on a user's behalf (webhooks).
//!
//! A thread owner names a webhook URL; without a guard, that makes the server a proxy into its
//! own network: loopback services, the cloud metadata endpoint, databases on private addresses.
//! So every address a webhook reaches must be public: an IP literal is checked when the
//! webhook is registered and again before each delivery, a host name is checked after DNS
//! resolution, on every connection (a name that resolves to a public address at registration
//! and to 127.0.0.1 later is caught), and redirects are not followed at all (a public receiver
//! answering `307 Location: http://127.0.0.1/` gets its delivery counted as failed). An operator
//! whose receivers live on the private network turns the guard off with
//! `FERRY_WEBHOOK_ALLOW_PRIVATE=1`.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Whether `ip` is an address on the public internet: not loopback, private, link-local
/// (where cloud metadata services answer), shared (CGNAT), multicast, reserved, documentation
/// or unspecified, and, for IPv6 forms that carry an IPv4 address, not one of those either.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240; // reserved
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    let embedded_v4 = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    match segments {
        // NAT64 (64:ff9b::/96) and the deprecated IPv4-compatible form (::a.b.c.d) carry an
        // IPv4 address that decides.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo]
            if !ip.is_loopback() && !ip.is_unspecified() =>
        {
            return is_public_v4(embedded_v4(hi, lo));
        }
        // 6to4 (2002::/16) carries its IPv4 address in the second and third segments.
        [0x2002, hi, lo, ..] => return is_public_v4(embedded_v4(hi, lo)),
        _ => {}
    }
    let first = segments[0];
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local fc00::/7 (cloud metadata fd00:ec2::254)
        || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || (first == 0x2001 && segments[1] == 0x0db8) // documentation
        || (first == 0x2001 && segments[1] == 0) // Teredo: tunnels to anywhere
        || first == 0x0100; // discard-only 100::/64
    !special
}

/// Why a webhook URL is refused.
pub fn check_webhook_url(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err("the URL must be http or https".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the URL must not carry credentials; the body is signed instead".into());
    }
    if allow_private {
        return Ok(());
    }
    match url.host() {
        None => Err("the URL has no host".into()),
        Some(url::Host::Ipv4(ip)) => public_or_refused(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => public_or_refused(IpAddr::V6(ip)),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                Err(
                    "the URL names this machine (localhost); webhooks go to public addresses"
                        .into(),
                )
            } else {
                Ok(())
            }
        }
    }
}

fn public_or_refused(ip: IpAddr) -> Result<(), String> {
    if is_public(ip) {
        Ok(())
    } else {
        Err(format!(
            "{ip} is not a public address; webhooks go to public addresses only \
             (an operator can allow private ones with FERRY_WEBHOOK_ALLOW_PRIVATE=1)"
        ))
    }
}

/// Resolves host names like the system does, then keeps only public addresses; a name with
/// none left fails to resolve, so no connection is made.
#[derive(Debug, Clone, Copy)]
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| is_public(addr.ip()))
                .collect();
            if public.is_empty() {
                return Err(format!(
                    "{host} resolves to no public address; webhooks go to public addresses only"
                )
                .into());
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client webhooks are posted with: no redirects, no proxies from the environment,
/// a timeout per request, and (unless `allow_private`) only public addresses.
pub fn webhook_client(timeout: Duration, allow_private: bool) -> reqwest::Result<reqwest::Client> {
    let builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if allow_private {
        builder.build()
    } else {
        builder.dns_resolver(PublicOnly).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().unwrap())
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
        ] {
            assert!(!public(ip), "{ip} must not count as public");
        }
    }

    #[test]
    fn public_addresses_are() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::",
        ] {
            assert!(public(ip), "{ip} is public");
        }
    }

    #[test]
    fn webhook_urls() {
        let check = |url: &str, allow| check_webhook_url(&url.parse().unwrap(), allow);
        assert!(check("https://hooks.example.com/ferry", false).is_ok());
        assert!(check("http://93.184.216.34:8080/x", false).is_ok());
        for refused in [
            "http://127.0.0.1:9000/",
            "http://[::1]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:10.0.0.1]/",
            "http://user:pass@example.com/",
            "ftp://example.com/",
        ] {
            assert!(check(refused, false).is_err(), "{refused} must be refused");
        }
        assert!(check("http://127.0.0.1:9000/", true).is_ok());
        assert!(check("http://user:pass@example.com/", true).is_err());
    }
}
