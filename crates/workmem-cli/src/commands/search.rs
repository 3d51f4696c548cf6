//! `workmem search`: ranked full-text search over the active curated
//! entries (first) and the facts (docs/search.md).

use clap::Args;
use workmem::{HitType, Kind, SearchOptions, SearchScope};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem search`.
#[derive(Debug, Args)]
#[command(after_help = "Query: words (all must match, in the content or the memory key), \
\"a phrase\", a prefix such as pars*; Chinese and Japanese text by its characters.

Examples:
  workmem search sqlite wal
  workmem search '\"connection pool\"' --kind decision
  workmem search pars* --in facts --since 2026-01-01T00:00:00Z
  workmem search runtime --key runtime. --json
  workmem search cache --cursor <next_cursor of the previous page>")]
pub struct SearchArgs {
    /// What to look for (at most 1,000 characters)
    pub query: String,
    /// Only items of this kind (decision, convention, pitfall, outcome)
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Only items whose memory key starts with this
    #[arg(long, value_name = "PREFIX")]
    pub key: Option<String>,
    /// Only facts recorded (entries last seen) at or after this RFC 3339 instant
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Only facts recorded (entries last seen) at or before this RFC 3339 instant
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// Where to look: memory (active entries), facts, or all
    #[arg(long = "in", value_name = "WHERE", default_value = "all")]
    pub scope: String,
    /// Hits per page, 1-50 [default: 10]
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Continue from the next_cursor a previous page printed
    #[arg(long, value_name = "C")]
    pub cursor: Option<String>,
}

fn instant(flag: &str, text: Option<&str>) -> Result<Option<workmem::Stamp>, CommandError> {
    text.map(|text| {
        workmem::Stamp::parse_normalized(text).map_err(|msg| {
            CommandError::invalid(flag, msg)
                .hinted("use an RFC 3339 instant, e.g. 2026-01-01T12:00:00Z")
        })
    })
    .transpose()
}

/// Runs `workmem search`.
///
/// Errors: exit 2 for a query, filter, limit or cursor that cannot be
/// used; read errors of the workspace.
pub fn run(ctx: &Ctx, args: &SearchArgs) -> Result<(), CommandError> {
    let mut options = SearchOptions::new();
    options.kind = args.kind.as_deref().map(Kind::parse).transpose()?;
    options.key_prefix.clone_from(&args.key);
    options.since = instant("--since", args.since.as_deref())?;
    options.until = instant("--until", args.until.as_deref())?;
    options.scope = SearchScope::parse(&args.scope)?;
    options.limit = args.limit;
    options.cursor.clone_from(&args.cursor);
    let page = ctx.workspace()?.search(&args.query, &options)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&page);
    }
    if page.hits.is_empty() {
        ctx.ui.status("no hit");
    }
    for hit in &page.hits {
        let what = match hit.hit_type {
            HitType::Entry => format!("entry {} rev {}", hit.id, hit.revision.unwrap_or(1)),
            HitType::Fact => format!("fact {}", hit.id),
        };
        let key = hit.memory_key.as_deref().map(|k| format!(" {k}")).unwrap_or_default();
        let date = match hit.hit_type {
            HitType::Entry => format!(
                "{} .. {}",
                hit.first_seen.as_ref().map(workmem::Stamp::utc_day).unwrap_or_default(),
                hit.last_seen.as_ref().map(workmem::Stamp::utc_day).unwrap_or_default()
            ),
            HitType::Fact => {
                hit.recorded_at.as_ref().map(workmem::Stamp::utc_day).unwrap_or_default()
            }
        };
        let review = hit.conflict_id.as_deref().map(|c| format!(": {c}")).unwrap_or_default();
        ctx.ui.line(format!("[{}]{key}  {what}  {date}  ({}{review})", hit.kind, hit.status))?;
        ctx.ui.line(format!("    {}", hit.snippet))?;
    }
    match &page.next_cursor {
        Some(cursor) => ctx.ui.status(format!(
            "{} of {} hits shown; next page: workmem search ... --cursor {cursor}",
            page.hits.len(),
            page.total
        )),
        None if !page.hits.is_empty() => {
            ctx.ui.status(format!("{} hit{}", page.total, if page.total == 1 { "" } else { "s" }));
        }
        None => {}
    }
    Ok(())
}
