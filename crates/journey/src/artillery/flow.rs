//! A scenario's flow in Artillery's words into journey steps: its actions (requests,
//! `think`, `log`, `loop` with `count` or `over`, `ifTrue`) and each request's parts
//! (`json`, `body`, `form`, `headers`, `qs`, `capture`, `expect`).

use super::*;

impl Translation {
    /// Writes a flow's actions as steps under `table` (`journey.step`, or a loop
    /// group's `journey.step.step`).
    pub(super) fn flow(
        &mut self,
        actions: &[RawAction],
        at: &str,
        table: &str,
        l: Option<LoopVars>,
        out: &mut String,
    ) -> Result<(), Invalid> {
        for (i, a) in actions.iter().enumerate() {
            let at = format!("{at}[{i}]");
            let methods = [
                ("GET", &a.get),
                ("POST", &a.post),
                ("PUT", &a.put),
                ("PATCH", &a.patch),
                ("DELETE", &a.delete),
                ("HEAD", &a.head),
                ("OPTIONS", &a.options),
            ];
            let given = methods.iter().filter(|(_, r)| r.is_some()).count()
                + [a.think.is_some(), a.repeat.is_some(), a.log.is_some()]
                    .iter()
                    .filter(|x| **x)
                    .count();
            if a.function.is_some() {
                return refuse(&format!("{at}.function"), "JavaScript functions do not run here: captures, conditions and templates do their work");
            }
            if a.parallel.is_some() {
                return refuse(
                    &format!("{at}.parallel"),
                    "a user sends one request at a time here",
                );
            }
            if a.while_true.is_some() {
                return refuse(
                    &format!("{at}.whileTrue"),
                    "a loop turns a count of times or over a list",
                );
            }
            if given != 1 {
                return Err(format!(
                    "{at}: one action (get, post, put, patch, delete, head, options, think, loop or log)"
                ).into());
            }
            if (a.count.is_some() || a.over.is_some()) && a.repeat.is_none() {
                return Err(format!("{at}: count and over belong to a loop").into());
            }
            if let Some((method, Some(r))) = methods.iter().find(|(_, r)| r.is_some()) {
                self.request(
                    method,
                    r,
                    &format!("{at}.{}", method.to_lowercase()),
                    table,
                    l,
                    out,
                )?;
            } else if let Some(t) = &a.think {
                let d = seconds(t, &format!("{at}.think"))?;
                let _ = writeln!(out, "\n[[{table}]]\nthink = {}", quoted(&duration_text(d)));
            } else if let Some(line) = &a.log {
                let _ = writeln!(out, "\n[[{table}]]\nlog = {}", quoted(&template(line, l)?));
            } else if let Some(inner) = &a.repeat {
                self.loops += 1;
                let (element, count) = (
                    format!("loop_element_{}", self.loops),
                    format!("loop_count_{}", self.loops),
                );
                let mut spec = String::new();
                match (&a.count, &a.over) {
                    (_, Some(Yaml::String(var))) => {
                        let var = var
                            .trim()
                            .trim_start_matches("{{")
                            .trim_end_matches("}}")
                            .trim();
                        let _ = write!(
                            spec,
                            "over = {}, as = {}, index = {}",
                            quoted(var),
                            quoted(&element),
                            quoted(&count)
                        );
                    }
                    (_, Some(Yaml::Sequence(items))) => {
                        let items = items
                            .iter()
                            .map(|x| {
                                text_of(x)
                                    .ok_or_else(|| format!("{at}.over: a list of texts or numbers"))
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        if items.iter().any(|x| x.contains("{{")) {
                            return refuse(
                                &format!("{at}.over: a template in a list"),
                                "a list's items are sent as written; loop over a captured list instead",
                            );
                        }
                        let list = format!("loop_list_{}", self.loops);
                        self.lists.push((list.clone(), items));
                        let _ = write!(
                            spec,
                            "over = {}, as = {}, index = {}",
                            quoted(&list),
                            quoted(&element),
                            quoted(&count)
                        );
                    }
                    (_, Some(_)) => {
                        return Err(format!("{at}.over: a variable's name or a list").into())
                    }
                    (Some(n), None) => {
                        let text = text_of(n).ok_or_else(|| format!("{at}.count: a number"))?;
                        let (from, to) = match text.split_once('-') {
                            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
                            None => (Ok(0), text.trim().parse::<u32>()),
                        };
                        let (Ok(from), Ok(to)) = (from, to) else {
                            return Err(format!(
                                "{at}.count: {text:?}: a number, or a range \"1-10\""
                            )
                            .into());
                        };
                        if to <= from {
                            return Err(format!("{at}.count: {text:?}: no turn").into());
                        }
                        // $loopElement is the turn's number where there is no list.
                        let _ = write!(
                            spec,
                            "count = {}, index = {}, first = {from}",
                            to - from,
                            quoted(&count)
                        );
                        let _ = writeln!(out, "\n[[{table}]]\nloop = {{ {spec} }}");
                        self.flow(
                            inner,
                            &format!("{at}.loop"),
                            &format!("{table}.step"),
                            Some(LoopVars {
                                element: &count,
                                count: &count,
                            }),
                            out,
                        )?;
                        continue;
                    }
                    (None, None) => return Err(format!("{at}: a loop needs count or over").into()),
                }
                let _ = writeln!(out, "\n[[{table}]]\nloop = {{ {spec} }}");
                self.flow(
                    inner,
                    &format!("{at}.loop"),
                    &format!("{table}.step"),
                    Some(LoopVars {
                        element: &element,
                        count: &count,
                    }),
                    out,
                )?;
            }
        }
        Ok(())
    }

    fn request(
        &mut self,
        method: &str,
        r: &RawRequest,
        at: &str,
        table: &str,
        l: Option<LoopVars>,
        out: &mut String,
    ) -> Result<(), Invalid> {
        for (k, given) in [
            ("formData", r.form_data.is_some()),
            ("beforeRequest", r.before_request.is_some()),
            ("afterResponse", r.after_response.is_some()),
            ("match", r.matches.is_some()),
            ("gzip", r.gzip.is_some()),
        ] {
            if given {
                let instead = match k {
                    "formData" => "multipart bodies are not sent; use form (URL-encoded) or body",
                    "match" => "use expect (its statusCode, contentType, hasProperty, hasHeader and headerEquals run)",
                    "gzip" => "answers are read as they come; send Accept-Encoding in headers if wanted",
                    _ => "JavaScript hooks do not run here: captures, conditions and templates do their work",
                };
                return refuse(&format!("{at}.{k}"), instead);
            }
        }
        if r.follow_redirect == Some(true) {
            return refuse(
                &format!("{at}.followRedirect"),
                "each answer is the step's own: a redirect is another step",
            );
        }
        let base = match &r.name {
            Some(n) => n.clone(),
            None => r.url.split('?').next().unwrap_or(&r.url).to_string(),
        };
        let n = self.names.entry(base.clone()).or_default();
        *n += 1;
        let name = if *n == 1 {
            base
        } else {
            format!("{base} #{n}")
        };
        let mut url = template(&r.url, l)?;
        if let Some(qs) = &r.qs {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&encoded(qs, &format!("{at}.qs"), l)?);
        }
        let mut headers: BTreeMap<String, String> = self.defaults.clone();
        for (k, v) in &r.headers {
            headers.retain(|h, _| !h.eq_ignore_ascii_case(k));
            headers.insert(k.clone(), v.clone());
        }
        // Cookies of the request's own: one Cookie field, which the user's jar joins.
        if let Some(c) = &r.cookie {
            let Yaml::Mapping(m) = c else {
                return Err(format!("{at}.cookie: a map of names to values").into());
            };
            let mut pairs = Vec::new();
            for (k, v) in m {
                let (Some(k), Some(v)) = (text_of(k), text_of(v)) else {
                    return Err(
                        format!("{at}.cookie: names and values are texts or numbers").into(),
                    );
                };
                pairs.push(format!("{k}={v}"));
            }
            headers.retain(|h, _| !h.eq_ignore_ascii_case("cookie"));
            headers.insert("Cookie".into(), pairs.join("; "));
        }
        if let Some(a) = &r.auth {
            if a.user.contains("{{") || a.pass.contains("{{") {
                return Err(format!("{at}.auth: a user and password of their own; for templated ones send an Authorization header").into());
            }
            headers.insert(
                "Authorization".into(),
                format!(
                    "Basic {}",
                    base64(format!("{}:{}", a.user, a.pass).as_bytes())
                ),
            );
        }
        let bodies = [r.json.is_some(), r.body.is_some(), r.form.is_some()];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(format!("{at}: one of json, body or form").into());
        }
        let has_type =
            |h: &BTreeMap<String, String>| h.keys().any(|k| k.eq_ignore_ascii_case("content-type"));
        let body = if let Some(j) = &r.json {
            if !has_type(&headers) {
                headers.insert("Content-Type".into(), "application/json".into());
            }
            let j = templated_json(&json_of(j).map_err(|e| format!("{at}.json: {e}"))?, l)?;
            Some(crate::journey::json_value_template(&j).map_err(|e| format!("{at}.json: {e}"))?)
        } else if let Some(b) = &r.body {
            Some(template(b, l)?)
        } else if let Some(f) = &r.form {
            if !has_type(&headers) {
                headers.insert(
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                );
            }
            Some(encoded(f, &format!("{at}.form"), l)?)
        } else {
            None
        };
        let _ = writeln!(out, "\n[[{table}]]\nname = {}", quoted(&name));
        if method != "GET" {
            let _ = writeln!(out, "method = {}", quoted(method));
        }
        let _ = writeln!(out, "url = {}", quoted(&url));
        if let Some(cond) = &r.if_true {
            let _ = writeln!(out, "if = {}", quoted(cond));
        }
        if !headers.is_empty() {
            let hs: Vec<String> = headers
                .iter()
                .map(|(k, v)| Ok(format!("{} = {}", quoted(k), quoted(&template(v, l)?))))
                .collect::<Result<_, Invalid>>()?;
            let _ = writeln!(out, "headers = {{ {} }}", hs.join(", "));
        }
        if let Some(b) = body {
            let _ = writeln!(out, "body = {}", quoted(&b));
        }
        if let Some(c) = &r.capture {
            let mut caps = Vec::new();
            for (k, c) in one_or_many(c).into_iter().enumerate() {
                let c: RawCapture =
                    serde_norway::from_value(c).map_err(|e| format!("{at}.capture[{k}]: {e}"))?;
                let cat = format!("{at}.capture[{k}]");
                if c.selector.is_some() || c.xpath.is_some() {
                    return refuse(
                        &format!("{cat}.selector"),
                        "capture from HTML with a regexp",
                    );
                }
                if c.transform.is_some() || c.index.is_some() || c.flags.is_some() {
                    return refuse(
                        &format!("{cat}.transform/index/flags"),
                        "a capture takes the first match, or every match with all",
                    );
                }
                if c.group.as_ref().and_then(text_of).is_some_and(|g| g != "1") {
                    return refuse(
                        &format!("{cat}.group"),
                        "a regexp capture takes its first group",
                    );
                }
                let (kind, expr) = match (&c.json, &c.regexp, &c.header) {
                    (Some(j), None, None) => ("json", j.clone()),
                    (None, Some(r), None) => ("regexp", r.clone()),
                    (None, None, Some(h)) => ("header", h.clone()),
                    _ => return Err(format!("{cat}: one of json, regexp or header").into()),
                };
                let default = match c.strict {
                    Some(false) => ", default = \"\"",
                    _ => "",
                };
                caps.push(format!(
                    "{{ {kind} = {}, as = {}{default} }}",
                    quoted(&template(&expr, l)?),
                    quoted(&c.var)
                ));
            }
            let _ = writeln!(out, "capture = [{}]", caps.join(", "));
        }
        if let Some(e) = &r.expect {
            let mut checks = Vec::new();
            for (k, e) in one_or_many(e).iter().enumerate() {
                let eat = format!("{at}.expect[{k}]");
                let Yaml::Mapping(m) = e else {
                    return Err(format!("{eat}: an expectation, as statusCode: 200").into());
                };
                for (kind, v) in m {
                    let kind = kind.as_str().unwrap_or_default();
                    let line = match kind {
                        "statusCode" => {
                            let codes = match v {
                                Yaml::Sequence(s) => s.iter().filter_map(text_of).collect::<Vec<_>>(),
                                other => text_of(other).into_iter().collect(),
                            };
                            if codes.is_empty() {
                                return Err(format!("{eat}.statusCode: a status or a list of them").into());
                            }
                            format!("status {}", codes.join(","))
                        }
                        "contentType" => {
                            let t = text_of(v).ok_or_else(|| format!("{eat}.contentType: a text"))?;
                            if t == "json" {
                                "header Content-Type contains json".into()
                            } else {
                                format!("header Content-Type == {t}")
                            }
                        }
                        "hasProperty" => {
                            let p = text_of(v).ok_or_else(|| format!("{eat}.hasProperty: a property's path"))?;
                            format!("json $.{p} exists")
                        }
                        "hasHeader" => {
                            let h = text_of(v).ok_or_else(|| format!("{eat}.hasHeader: a header's name"))?;
                            format!("header {h}")
                        }
                        "headerEquals" => {
                            let pair = match v {
                                Yaml::Sequence(s) if s.len() == 2 => (text_of(&s[0]), text_of(&s[1])),
                                _ => (None, None),
                            };
                            let (Some(h), Some(val)) = pair else {
                                return Err(format!("{eat}.headerEquals: [NAME, VALUE]").into());
                            };
                            if val.contains("{{") {
                                return refuse(&format!("{eat}.headerEquals"), "a header is compared with a value of its own, not a template");
                            }
                            format!("header {h} == {val}")
                        }
                        other => {
                            return refuse(
                                &format!("{eat}.{other}"),
                                "the expectations run are statusCode, contentType, hasProperty, hasHeader and headerEquals",
                            )
                        }
                    };
                    self.expectations.insert(line.clone(), kind.to_string());
                    checks.push(quoted(&line));
                }
            }
            let _ = writeln!(out, "check = [{}]", checks.join(", "));
        }
        Ok(())
    }
}

/// A value Artillery takes as one item or a list of them, as a list.
fn one_or_many(v: &Yaml) -> Vec<Yaml> {
    match v {
        Yaml::Sequence(s) => s.clone(),
        other => vec![other.clone()],
    }
}

/// `qs` or `form`: each name and value templated and URL-encoded, `&` between.
fn encoded<'m>(
    pairs: impl IntoIterator<Item = (&'m String, &'m Yaml)>,
    at: &str,
    l: Option<LoopVars>,
) -> Result<String, Invalid> {
    let pairs = pairs
        .into_iter()
        .map(|(k, v)| {
            let v = text_of(v).ok_or_else(|| format!("{at}.{k}: a text or a number"))?;
            Ok(format!(
                "{}={}",
                form(&template(k, l)?),
                form(&template(&v, l)?)
            ))
        })
        .collect::<Result<Vec<_>, Invalid>>()?;
    Ok(pairs.join("&"))
}
