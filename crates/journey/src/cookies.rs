//! A user's cookie jar, as RFC 6265 has a user agent keep one: a `Set-Cookie` is
//! stored for its domain (host-only without a `Domain`, refused when the domain is
//! not the request's host or one of its parents) and path (the request's directory
//! without a `Path`), until `Max-Age` or `Expires` (at once when already past), and
//! `Secure` ones go over https only; a request sends the cookies that match its host
//! and path, longer paths first. Within RFC 6265's minimums a jar holds at most
//! [`MAX_COOKIES`] of at most [`MAX_COOKIE`] bytes each, the oldest given up first.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most cookies one jar holds.
pub const MAX_COOKIES: usize = 50;
/// The longest cookie (name, value and attributes) stored.
pub const MAX_COOKIE: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cookie {
    name: String,
    value: String,
    /// Lower case, no leading dot.
    domain: String,
    host_only: bool,
    path: String,
    expires: Option<SystemTime>,
    secure: bool,
    /// When it was first stored, for the order of equal paths.
    created: u64,
}

/// Why a `Set-Cookie` was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Longer than [`MAX_COOKIE`].
    TooLong,
    /// No `name=value` before the attributes.
    Malformed,
    /// Its `Domain` is not the request's host or a parent of it.
    ForeignDomain,
}

/// One user's cookies.
#[derive(Debug, Clone, Default)]
pub struct Jar {
    cookies: Vec<Cookie>,
    stored: u64,
}

impl Jar {
    /// Stores the cookie of one `Set-Cookie` value, received for a request to `host`
    /// at `path`, at `now`. A cookie whose expiry has passed removes the one it
    /// replaces.
    pub fn store(
        &mut self,
        set_cookie: &str,
        host: &str,
        path: &str,
        now: SystemTime,
    ) -> Result<(), Refused> {
        if set_cookie.len() > MAX_COOKIE {
            return Err(Refused::TooLong);
        }
        let mut parts = set_cookie.split(';');
        let (name, value) = parts
            .next()
            .and_then(|p| p.split_once('='))
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, _)| !n.is_empty())
            .ok_or(Refused::Malformed)?;
        let host = host.to_ascii_lowercase();
        let mut c = Cookie {
            name: name.to_string(),
            value: value.to_string(),
            domain: host.clone(),
            host_only: true,
            path: default_path(path),
            expires: None,
            secure: false,
            created: 0,
        };
        let mut max_age: Option<i64> = None;
        for attr in parts {
            let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            match k.as_str() {
                "expires" => {
                    if let Some(t) = http_date(v) {
                        c.expires = Some(t);
                    }
                }
                "max-age" => max_age = v.parse().ok().or(max_age),
                "domain" if !v.is_empty() => {
                    let d = v.trim_start_matches('.').to_ascii_lowercase();
                    if !domain_match(&host, &d) {
                        return Err(Refused::ForeignDomain);
                    }
                    c.domain = d;
                    c.host_only = false;
                }
                "path" if v.starts_with('/') => c.path = v.to_string(),
                "secure" => c.secure = true,
                _ => {}
            }
        }
        if let Some(s) = max_age {
            // Max-Age wins over Expires; zero or less expires it now.
            c.expires = Some(match s <= 0 {
                true => UNIX_EPOCH,
                false => now + Duration::from_secs(s as u64),
            });
        }
        let same = |o: &Cookie| o.name == c.name && o.domain == c.domain && o.path == c.path;
        let old = self.cookies.iter().position(same);
        if c.expires.is_some_and(|e| e <= now) {
            if let Some(i) = old {
                self.cookies.remove(i);
            }
            return Ok(());
        }
        match old {
            Some(i) => {
                c.created = self.cookies[i].created;
                self.cookies[i] = c;
            }
            None => {
                self.cookies.retain(|o| o.expires.is_none_or(|e| e > now));
                if self.cookies.len() >= MAX_COOKIES {
                    let oldest = (0..self.cookies.len())
                        .min_by_key(|&i| self.cookies[i].created)
                        .expect("a full jar");
                    self.cookies.remove(oldest);
                }
                self.stored += 1;
                c.created = self.stored;
                self.cookies.push(c);
            }
        }
        Ok(())
    }

    /// The `Cookie` header's value for a request to `host` at `path` (over TLS when
    /// `secure`) at `now`, if any cookie matches.
    pub fn header(&self, host: &str, path: &str, secure: bool, now: SystemTime) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        let host = host.to_ascii_lowercase();
        let mut sent: Vec<&Cookie> = (self.cookies.iter())
            .filter(|c| match c.host_only {
                true => c.domain == host,
                false => domain_match(&host, &c.domain),
            })
            .filter(|c| path_match(path, &c.path))
            .filter(|c| secure || !c.secure)
            .filter(|c| c.expires.is_none_or(|e| e > now))
            .collect();
        if sent.is_empty() {
            return None;
        }
        sent.sort_by(|a, b| {
            b.path
                .len()
                .cmp(&a.path.len())
                .then(a.created.cmp(&b.created))
        });
        let mut out = String::new();
        for c in sent {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(&c.name);
            out.push('=');
            out.push_str(&c.value);
        }
        Some(out)
    }

    /// How many cookies the jar holds.
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Empties the jar (a user beginning its journey again).
    pub fn clear(&mut self) {
        self.cookies.clear();
    }
}

/// RFC 6265 5.1.3: `host` is `domain`, or ends with `.domain` and is not an address.
fn domain_match(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && host.parse::<std::net::IpAddr>().is_err()
            && !host.starts_with('['))
}

/// RFC 6265 5.1.4: the request's path is the cookie's, or below it.
fn path_match(request: &str, cookie: &str) -> bool {
    let request = request.split(['?', '#']).next().unwrap_or("/");
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes().get(cookie.len()) == Some(&b'/')))
}

/// RFC 6265 5.1.4: the request path's directory.
fn default_path(path: &str) -> String {
    let path = path.split(['?', '#']).next().unwrap_or("");
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) if path.starts_with('/') => path[..i].to_string(),
        Some(_) => "/".into(),
    }
}

/// An HTTP date in its preferred form, `Sun, 06 Nov 1994 08:49:37 GMT` (the RFC 850
/// form with dashes is read too).
fn http_date(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let rest = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let f: Vec<&str> = rest.split([' ', '-']).filter(|x| !x.is_empty()).collect();
    if f.len() < 4 {
        return None;
    }
    let day: u64 = f[0].parse().ok()?;
    let month = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|m| f[1].len() >= 3 && f[1][..3].eq_ignore_ascii_case(m))? as u64
        + 1;
    let mut year: u64 = f[2].parse().ok()?;
    if year < 100 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let hms: Vec<u64> = f[3]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if hms.len() != 3 || !(1..=31).contains(&day) || hms[0] > 23 || hms[1] > 59 || hms[2] > 60 {
        return None;
    }
    let days = stampede_wire::date::days_from_civil(year as i64, month as u32, day as u32);
    let secs = days * 86_400 + (hms[0] * 3600 + hms[1] * 60 + hms[2]) as i64;
    Some(match secs >= 0 {
        true => UNIX_EPOCH + Duration::from_secs(secs as u64),
        false => UNIX_EPOCH,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn cookies_go_back_to_their_host_and_path_longest_path_first() {
        let now = at(1_800_000_000);
        let mut j = Jar::default();
        j.store("sid=1; Path=/; HttpOnly", "Shop.Test", "/login", now)
            .unwrap();
        j.store("cart=9; Path=/cart", "shop.test", "/cart/add", now)
            .unwrap();
        j.store("dir=x", "shop.test", "/a/b/page", now).unwrap();
        j.store("wide=w; Domain=.shop.test", "api.shop.test", "/", now)
            .unwrap();
        assert_eq!(
            j.header("shop.test", "/cart/1?x=2", false, now).as_deref(),
            Some("cart=9; sid=1; wide=w")
        );
        assert_eq!(
            j.header("shop.test", "/cartoon", false, now).as_deref(),
            Some("sid=1; wide=w")
        );
        assert_eq!(
            j.header("shop.test", "/a/b/other", false, now).as_deref(),
            Some("dir=x; sid=1; wide=w")
        );
        // Host-only cookies stay with their host; a Domain cookie goes to subdomains.
        assert_eq!(
            j.header("api.shop.test", "/", false, now).as_deref(),
            Some("wide=w")
        );
        assert_eq!(j.header("other.test", "/", false, now), None);
        assert_eq!(
            j.store("evil=1; Domain=other.test", "shop.test", "/", now),
            Err(Refused::ForeignDomain)
        );
        assert_eq!(
            j.store("=1", "shop.test", "/", now),
            Err(Refused::Malformed)
        );
        assert_eq!(
            j.store("novalue", "shop.test", "/", now),
            Err(Refused::Malformed)
        );
    }

    #[test]
    fn expiry_secure_and_replacement_follow_rfc_6265() {
        let now = at(1_800_000_000);
        let mut j = Jar::default();
        j.store("a=1; Max-Age=60", "h.test", "/", now).unwrap();
        j.store(
            "b=2; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
            "h.test",
            "/",
            now,
        )
        .unwrap();
        j.store(
            "c=3; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Max-Age=10",
            "h.test",
            "/",
            now,
        )
        .unwrap();
        j.store("s=4; Secure", "h.test", "/", now).unwrap();
        assert_eq!(
            j.header("h.test", "/", false, now).as_deref(),
            Some("a=1; c=3")
        );
        assert_eq!(
            j.header("h.test", "/", true, now).as_deref(),
            Some("a=1; c=3; s=4")
        );
        // Max-Age won over Expires: c is gone after 10 s, a after 60.
        assert_eq!(
            j.header("h.test", "/", false, at(1_800_000_011)).as_deref(),
            Some("a=1")
        );
        assert_eq!(j.header("h.test", "/", false, at(1_800_000_061)), None);
        // A new value replaces the old in place; a past expiry removes it.
        j.store("a=5", "h.test", "/", now).unwrap();
        assert_eq!(
            j.header("h.test", "/", false, now).as_deref(),
            Some("a=5; c=3")
        );
        j.store("a=; Max-Age=0", "h.test", "/", now).unwrap();
        assert_eq!(j.header("h.test", "/", false, now).as_deref(), Some("c=3"));
        assert_eq!(
            http_date("Sun, 06-Nov-94 08:49:37 GMT"),
            Some(at(784_111_777))
        );
        assert_eq!(
            http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at(784_111_777))
        );
        assert_eq!(http_date("soon"), None);
    }

    #[test]
    fn a_jar_is_bounded_and_addresses_are_matched_whole() {
        let now = at(1_800_000_000);
        let mut j = Jar::default();
        for i in 0..MAX_COOKIES + 5 {
            j.store(&format!("c{i}=v"), "h.test", "/", now).unwrap();
        }
        assert_eq!(j.len(), MAX_COOKIES);
        let h = j.header("h.test", "/", false, now).unwrap();
        assert!(h.starts_with("c5=v; c6=v"), "{h}");
        let long = format!("x={}", "y".repeat(MAX_COOKIE));
        assert_eq!(j.store(&long, "h.test", "/", now), Err(Refused::TooLong));
        assert!(!domain_match("1.2.3.4", "2.3.4"));
        assert!(domain_match("a.b.test", "b.test"));
        assert!(!domain_match("ab.test", "b.test"));
        assert_eq!(default_path("/a/b/c"), "/a/b");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(default_path("x"), "/");
    }
}
