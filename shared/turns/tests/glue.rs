//! The Glue table `template.yaml` declares for Athena has the turn table's columns, in order,
//! with the Hive types of their Arrow types: a column added to the schema and not to the
//! table would be invisible to Athena.

use agentrl_turns::schema;
use arrow_schema::DataType;

fn hive(data_type: &DataType) -> String {
    match data_type {
        DataType::Utf8 => "string".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int32 => "int".into(),
        DataType::Int64 => "bigint".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Timestamp(_, _) => "timestamp".into(),
        DataType::List(item) => format!("array<{}>", hive(item.data_type())),
        DataType::Struct(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), hive(f.data_type())))
                .collect();
            format!("struct<{}>", fields.join(","))
        }
        other => panic!("no Hive type for {other}"),
    }
}

#[test]
fn the_glue_table_has_the_schema_s_columns_in_order() {
    let template =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
            .expect("template.yaml");
    let table = template
        .split("Type: AWS::Glue::Table")
        .nth(1)
        .expect("the Glue table");
    let columns: Vec<(String, String)> = table
        .split("Columns:")
        .nth(1)
        .expect("its columns")
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .map_while(|l| {
            let inner = l.strip_prefix("- {Name: ")?.strip_suffix("\"}")?;
            let (name, ty) = inner.split_once(", Type: \"")?;
            Some((name.to_owned(), ty.to_owned()))
        })
        .collect();
    let expected: Vec<(String, String)> = schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), hive(f.data_type())))
        .collect();
    assert_eq!(columns, expected);
}
