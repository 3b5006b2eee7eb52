//! A small shop for journeys to walk: a login that hands out a token, items with
//! ids, and a cart that takes an item only with a valid token and an id that exists.
//! It keeps no state: the token is the user's name with a keyed hash of it, checked
//! again on every request, and a cart's answer is worked out from the request alone —
//! so every answer is known in advance and any number of users may walk it at once.
//!
//! ```text
//! POST /shop/login      {"user": "ann", "password": "pw-ann"}  → {"user":"ann","token":"t.ann.…"}
//! GET  /shop/items      Authorization: Bearer TOKEN             → {"items":[{"id":101,…},…]}
//! GET  /shop/items/ID   Authorization: Bearer TOKEN             → {"id":101,"name":"tea","price":4.5}
//! POST /shop/cart       Authorization: Bearer TOKEN  {"item": 101, "qty": 2}
//!                                                  → {"user":"ann","item":101,"qty":2,"total":9.0}
//! ```
//!
//! A user's password is `pw-` and its name (a name is 1 to 64 letters, digits, `-` or
//! `_`). Wrong credentials answer 401, a missing or forged token 401, an unknown
//! item 404, a body that is not what the endpoint takes 400 — each with a JSON
//! `error`.

use std::io::Write as _;

use crate::request::{Method, Request};

/// The shop's items: id, name, price in cents.
pub const ITEMS: [(u32, &str, u32); 5] = [
    (101, "tea", 450),
    (102, "coffee", 725),
    (103, "cocoa", 500),
    (104, "mate", 675),
    (105, "chai", 550),
];

/// The most of one item a cart takes at once.
pub const MAX_QTY: u64 = 99;

/// The key of the tokens' hash: tokens are the same for every server run.
const KEY: u64 = 0x05ca_1ab1_e0dd_ba11;

/// Answers a request under `/shop/` into `body` (JSON); its status.
pub fn answer(req: &Request, rest: &[u8], body: &mut Vec<u8>) -> u16 {
    body.clear();
    let mut fail = |status: u16, why: &str| {
        body.clear();
        let _ = write!(body, "{{\"error\":{}}}", serde_json::Value::from(why));
        status
    };
    match (req.method, rest) {
        (Method::Post, b"login") => {
            let Some((user, password)) = credentials(req.body) else {
                return fail(400, "the body is {\"user\": NAME, \"password\": PASSWORD}");
            };
            if !valid_user(&user) || password != format!("pw-{user}") {
                return fail(401, "bad credentials");
            }
            let _ = write!(
                body,
                "{{\"user\":\"{user}\",\"token\":\"{}\"}}",
                token(&user)
            );
            200
        }
        (Method::Get | Method::Head, b"items") => {
            if user_of(req.authorization).is_none() {
                return fail(
                    401,
                    "no valid token: Authorization: Bearer TOKEN from /shop/login",
                );
            }
            body.extend_from_slice(b"{\"items\":[");
            for (i, it) in ITEMS.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                item_json(body, it);
            }
            body.extend_from_slice(b"]}");
            200
        }
        (Method::Get | Method::Head, p) if p.starts_with(b"items/") => {
            if user_of(req.authorization).is_none() {
                return fail(
                    401,
                    "no valid token: Authorization: Bearer TOKEN from /shop/login",
                );
            }
            let id = std::str::from_utf8(&p[6..])
                .ok()
                .and_then(|s| s.parse::<u32>().ok());
            match id.and_then(find) {
                Some(it) => {
                    item_json(body, it);
                    200
                }
                None => fail(404, "no such item"),
            }
        }
        (Method::Post, b"cart") => {
            let Some(user) = user_of(req.authorization) else {
                return fail(
                    401,
                    "no valid token: Authorization: Bearer TOKEN from /shop/login",
                );
            };
            let Some((id, qty)) = cart_line(req.body) else {
                return fail(
                    400,
                    "the body is {\"item\": ID, \"qty\": 1 to 99 (1 when absent)}",
                );
            };
            let Some(it) = u32::try_from(id).ok().and_then(find) else {
                return fail(404, "no such item");
            };
            let cents = u64::from(it.2) * qty;
            let _ = write!(
                body,
                "{{\"user\":\"{user}\",\"item\":{},\"qty\":{qty},\"total\":{}.{:02}}}",
                it.0,
                cents / 100,
                cents % 100
            );
            200
        }
        (Method::Get | Method::Head | Method::Post, _) => fail(404, "not a shop endpoint"),
        _ => fail(405, "method not allowed"),
    }
}

fn item_json(out: &mut Vec<u8>, (id, name, cents): &(u32, &str, u32)) {
    let _ = write!(
        out,
        "{{\"id\":{id},\"name\":\"{name}\",\"price\":{}.{:02}}}",
        cents / 100,
        cents % 100
    );
}

fn find(id: u32) -> Option<&'static (u32, &'static str, u32)> {
    ITEMS.iter().find(|it| it.0 == id)
}

fn valid_user(u: &str) -> bool {
    (1..=64).contains(&u.len())
        && u.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The token of `user`: its name and a keyed hash of it.
pub fn token(user: &str) -> String {
    // FNV-1a over the key and the name, then mixed: not a secret anyone relies on,
    // only a token a client cannot make up without the shop's answer.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ KEY;
    for b in user.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    format!("t.{user}.{h:016x}")
}

/// The user an `Authorization: Bearer` value's token belongs to, if it is one the
/// shop handed out.
fn user_of(authorization: &[u8]) -> Option<String> {
    let v = std::str::from_utf8(authorization).ok()?.trim();
    let (scheme, t) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let t = t.trim();
    let user = t.strip_prefix("t.")?.rsplit_once('.')?.0;
    (valid_user(user) && token(user) == t).then(|| user.to_string())
}

fn credentials(body: &[u8]) -> Option<(String, String)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some((
        v.get("user")?.as_str()?.to_string(),
        v.get("password")?.as_str()?.to_string(),
    ))
}

fn cart_line(body: &[u8]) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = v.get("item")?.as_u64()?;
    let qty = match v.get("qty") {
        None => 1,
        Some(q) => q.as_u64().filter(|q| (1..=MAX_QTY).contains(q))?,
    };
    Some((id, qty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(method: Method, auth: &'a [u8], body: &'a [u8]) -> Request<'a> {
        Request {
            method,
            path: b"/shop/x",
            query: b"",
            keep_alive: true,
            http10: false,
            body,
            upgrade: false,
            authorization: auth,
        }
    }

    fn call(method: Method, rest: &str, auth: &str, body: &str) -> (u16, String) {
        let mut out = Vec::new();
        let r = req(method, auth.as_bytes(), body.as_bytes());
        let status = answer(&r, rest.as_bytes(), &mut out);
        (status, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_user_logs_in_lists_items_and_fills_a_cart_with_the_token_it_was_given() {
        let (s, b) = call(
            Method::Post,
            "login",
            "",
            r#"{"user":"ann","password":"pw-ann"}"#,
        );
        assert_eq!(s, 200, "{b}");
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        let token = v["token"].as_str().unwrap().to_string();
        assert_eq!(token, super::token("ann"));
        assert!(token.starts_with("t.ann."));
        let auth = format!("Bearer {token}");
        let (s, b) = call(Method::Get, "items", &auth, "");
        assert_eq!(s, 200);
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["items"].as_array().unwrap().len(), 5);
        assert_eq!(v["items"][1]["id"], 102);
        assert_eq!(v["items"][1]["price"], 7.25);
        let (s, b) = call(Method::Get, "items/104", &auth, "");
        assert_eq!(
            (s, b.as_str()),
            (200, r#"{"id":104,"name":"mate","price":6.75}"#)
        );
        let (s, b) = call(Method::Post, "cart", &auth, r#"{"item": 101, "qty": 3}"#);
        assert_eq!(
            (s, b.as_str()),
            (200, r#"{"user":"ann","item":101,"qty":3,"total":13.50}"#)
        );
    }

    #[test]
    fn wrong_credentials_forged_tokens_unknown_items_and_bad_bodies_are_refused() {
        let good = format!("Bearer {}", token("bob"));
        let forged = format!("Bearer {}", token("bob").replace("t.bob.", "t.eve."));
        for (method, rest, auth, body, status, says) in [
            (
                Method::Post,
                "login",
                "",
                r#"{"user":"bob","password":"x"}"#,
                401,
                "bad credentials",
            ),
            (Method::Post, "login", "", "user=bob", 400, "the body is"),
            (
                Method::Post,
                "login",
                "",
                r#"{"user":"b b","password":"pw-b b"}"#,
                401,
                "bad credentials",
            ),
            (Method::Get, "items", "", "", 401, "no valid token"),
            (Method::Get, "items", &forged, "", 401, "no valid token"),
            (
                Method::Get,
                "items",
                "Basic Ym9iOng=",
                "",
                401,
                "no valid token",
            ),
            (Method::Get, "items/999", &good, "", 404, "no such item"),
            (
                Method::Post,
                "cart",
                &good,
                r#"{"item": 999}"#,
                404,
                "no such item",
            ),
            (
                Method::Post,
                "cart",
                &good,
                r#"{"item": 101, "qty": 0}"#,
                400,
                "the body is",
            ),
            (
                Method::Post,
                "cart",
                &good,
                r#"{"id": 101}"#,
                400,
                "the body is",
            ),
            (
                Method::Post,
                "cart",
                "",
                r#"{"item": 101}"#,
                401,
                "no valid token",
            ),
            (Method::Get, "basket", &good, "", 404, "not a shop endpoint"),
            (Method::Other, "cart", &good, "", 405, "method not allowed"),
        ] {
            let (s, b) = call(method, rest, auth, body);
            assert_eq!(s, status, "{rest} {body}: {b}");
            let v: serde_json::Value = serde_json::from_str(&b).unwrap();
            assert!(v["error"].as_str().unwrap().contains(says), "{b}");
        }
        let (s, b) = call(Method::Post, "cart", &good, r#"{"item": 102}"#);
        assert_eq!(
            (s, b.as_str()),
            (200, r#"{"user":"bob","item":102,"qty":1,"total":7.25}"#)
        );
    }
}
