package dedup.hbase.spark;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A line of JSON lines of precomputed fingerprints ({@code load --fingerprints}) checked in the
 * executors' JVMs with Jackson's streaming parser (read by {@link FingerprintLines}, the data
 * source, which gives the line numbers).
 *
 * <p>A line is taken here only when it is plainly good: valid UTF-8, one JSON object, no repeated
 * key, the id a non-empty string of at most 1024 UTF-8 bytes, the simhash a string of exactly 16
 * hex digits, any text a string, no lone surrogate in the strings kept. Every other line (a bad
 * record, or one the rules of the Python reader must judge: an integer id, " 0x..." simhashes ...)
 * comes out with its bytes ({@code raw}) for the Python reader (corpus.py), which gives it the
 * record or the error a local load gives it. Blank lines give no row. With no simhash field
 * (an empty name: texts to fingerprint, not fingerprints) every line comes out with its bytes,
 * blank ones too and undecoded (the file may be in another encoding than UTF-8, whose blank
 * lines the Python reader knows): the data source is then the split line reader of remote
 * JSON lines and text files.
 *
 * <p>Rows: ordinal, line, id, simhash (the 64 bits as a signed long), title, length (of the text,
 * in code points), text_bytes, featurizer, raw.
 */
public final class JsonLines {
  private JsonLines() {
  }

  public static final StructType SCHEMA = new StructType()
      .add("ordinal", DataTypes.IntegerType).add("line", DataTypes.LongType)
      .add("id", DataTypes.StringType).add("simhash", DataTypes.LongType)
      .add("title", DataTypes.StringType).add("length", DataTypes.LongType)
      .add("text_bytes", DataTypes.LongType).add("featurizer", DataTypes.StringType)
      .add("raw", DataTypes.BinaryType);

  static final class Checker {
    final String idField;
    final String textField;
    final String simhashField;
    final String titleField;
    final String featurizerField;
    final JsonFactory json = JsonFactory.builder().enable(
        com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

    Checker(String[] names) {
      idField = names[0];
      textField = names[1];
      simhashField = names[2];
      titleField = names[3];
      featurizerField = names[4];
    }

    InternalRow fallback(int ordinal, long line, byte[] raw) {
      return new GenericInternalRow(new Object[] {ordinal, line, null, null, null, null, null, null, raw});
    }

    /** The row of one line (of {@link #SCHEMA}), or null for a blank line. */
    InternalRow row(int ordinal, long line, byte[] raw) {
      if (simhashField.isEmpty()) {  // texts, not fingerprints: every line is the Python reader's
        return fallback(ordinal, line, raw);
      }
      String text;
      try {
        CharBuffer chars = utf8.reset().decode(ByteBuffer.wrap(raw));
        text = chars.toString();
      } catch (CharacterCodingException e) {
        return fallback(ordinal, line, raw);
      }
      if (blank(text)) {
        return null;
      }
      String id = null;
      String simhash = null;
      String title = null;
      String featurizer = null;
      String body = null;
      boolean bodyGiven = false;
      try (JsonParser parser = json.createParser(text)) {
        if (parser.nextToken() != JsonToken.START_OBJECT) {
          return fallback(ordinal, line, raw);
        }
        JsonToken token;
        while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
          String name = parser.currentName();
          JsonToken value = parser.nextToken();
          String string = value == JsonToken.VALUE_STRING ? parser.getText() : null;
          if (name.equals(idField)) {
            if (string == null) {
              return fallback(ordinal, line, raw);
            }
            id = string;
          } else if (name.equals(simhashField)) {
            simhash = string;
          } else if (name.equals(textField)) {
            if (value != JsonToken.VALUE_NULL && string == null) {
              return fallback(ordinal, line, raw);
            }
            body = string;
            bodyGiven = string != null;
          } else if (name.equals(titleField)) {
            title = string;
          } else if (name.equals(featurizerField)) {
            featurizer = string == null || string.isEmpty() ? null : string;
          }
          if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
            parser.skipChildren();
          }
        }
        if (token != JsonToken.END_OBJECT || parser.nextToken() != null) {
          return fallback(ordinal, line, raw);
        }
      } catch (Exception e) {  // malformed JSON, a repeated key: the Python reader says why
        return fallback(ordinal, line, raw);
      }
      if (id == null || id.isEmpty() || utf8Length(id) > 1024 || simhash == null || !hex16(simhash)
          || lonesurrogate(id) || lonesurrogate(title) || lonesurrogate(body)) {
        return fallback(ordinal, line, raw);
      }
      Long length = bodyGiven ? (long) body.codePointCount(0, body.length()) : null;
      long bytes = bodyGiven ? utf8Length(body) : 0L;
      return new GenericInternalRow(new Object[] {ordinal, line, UTF8String.fromString(id),
          Long.parseUnsignedLong(simhash, 16), utf8(title), length, bytes, utf8(featurizer), null});
    }

    static UTF8String utf8(String s) {
      return s == null ? null : UTF8String.fromString(s);
    }

    /** Python's str.strip() leaves nothing: every character is whitespace by str.isspace. */
    static boolean blank(String s) {
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        boolean space = (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0
            || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f
            || c == 0x205f || c == 0x3000;
        if (!space) {
          return false;
        }
      }
      return true;
    }

    static boolean hex16(String s) {
      if (s.length() != 16) {
        return false;
      }
      for (int i = 0; i < 16; i++) {
        if (Character.digit(s.charAt(i), 16) < 0 || s.charAt(i) > 'f') {
          return false;
        }
      }
      return true;
    }

    static boolean lonesurrogate(String s) {
      if (s == null) {
        return false;
      }
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
          if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
            i++;
          } else {
            return true;
          }
        } else if (Character.isLowSurrogate(c)) {
          return true;
        }
      }
      return false;
    }

    static long utf8Length(String s) {
      long n = 0;
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (c < 0x80) {
          n += 1;
        } else if (c < 0x800) {
          n += 2;
        } else if (Character.isHighSurrogate(c)) {
          n += 4;
          i++;
        } else {
          n += 3;
        }
      }
      return n;
    }
  }
}
