//! Calendar dates of epoch timestamps, for date partitions and dataset ids.

/// The UTC calendar date (`YYYY-MM-DD`) of epoch milliseconds.
pub fn utc_date(ms: i64) -> String {
    // Howard Hinnant's days-to-civil algorithm: exact over the whole proleptic Gregorian range.
    let days = ms.div_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Epoch milliseconds of the start (00:00 UTC) of the calendar date `YYYY-MM-DD`; `None` for
/// anything else, including dates that do not exist (`2026-02-30`).
pub fn date_start_ms(date: &str) -> Option<i64> {
    if date.len() != 10 || !date.is_char_boundary(4) || !date.is_char_boundary(8) {
        return None;
    }
    let year: i64 = date[0..4].parse().ok()?;
    let month: i64 = date[5..7].parse().ok()?;
    let day: i64 = date[8..10].parse().ok()?;
    // Howard Hinnant's days-from-civil, the inverse of `utc_date`.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let ms = (era * 146_097 + doe - 719_468) * 86_400_000;
    // Out-of-range months and days, signs and separators other than `-` do not survive the
    // round trip.
    (utc_date(ms) == date).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(utc_date(1_795_305_599_999), "2026-11-21");
        assert_eq!(utc_date(1_795_305_600_000), "2026-11-22");
        assert_eq!(utc_date(-1), "1969-12-31");
    }

    #[test]
    fn dates_parse_back_to_their_first_millisecond() {
        for ms in [0, 951_782_400_000, 1_795_305_600_000, -86_400_000] {
            assert_eq!(date_start_ms(&utc_date(ms)), Some(ms));
        }
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-1-011",
            "2026/01/01",
            "2026-+1-01",
            "x",
            "2026-01-01T",
        ] {
            assert_eq!(date_start_ms(bad), None, "{bad}");
        }
    }
}
