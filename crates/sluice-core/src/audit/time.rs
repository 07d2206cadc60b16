//! Times in the audit log: RFC 3339 in UTC, read and written without a
//! date library.

/// `time_ms` as RFC 3339 in UTC with milliseconds
/// (`2026-11-30T09:45:39.120Z`).
pub fn format_time_ms(time_ms: i64) -> String {
    let days = time_ms.div_euclid(86_400_000);
    let in_day = time_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// An RFC 3339 time (`2026-11-30T09:45:39Z`, `...39.5+01:00`) in
/// milliseconds since the epoch; digits past milliseconds are dropped.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let ms_digits = &b[start..i.min(start + 3)];
        millis = ms_digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))
            * 10i64.pow(3 - ms_digits.len() as u32);
    }
    let offset_minutes = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (eras of 400
/// years, each 146,097 days, counted from March so the leap day is last).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count since 1970-01-01 (the inverse of
/// [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: u64 = 1_796_030_400_000; // 2026-11-30T09:20:00Z

    #[test]
    fn times_are_written_and_read_as_rfc_3339() {
        assert_eq!(format_time_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_time_ms(NOW as i64 + 39_120),
            "2026-11-30T09:20:39.120Z"
        );
        assert_eq!(format_time_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(parse_rfc3339_ms("2026-11-30T09:20:00Z"), Some(NOW as i64));
        assert_eq!(
            parse_rfc3339_ms("2026-11-30T10:20:00.5+01:00"),
            Some(NOW as i64 + 500)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-30t09:20:00.123456z"),
            Some(NOW as i64 + 123)
        );
        for bad in [
            "2026-11-30",
            "2026-11-30T09:20:00",
            "2026-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T09:20:00.Z",
            "2026-11-30T09:20:00+1:00",
            "2026-11-30T09:20:00Zjunk",
            "+026-11-30T09:20:00Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_formatted_time_reads_back_the_same(ms in 0i64..253_402_300_800_000) {
            prop_assert_eq!(parse_rfc3339_ms(&format_time_ms(ms)), Some(ms));
        }
    }
}
