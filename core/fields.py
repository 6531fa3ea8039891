from rest_framework import serializers


class SlugLookupField(serializers.SlugRelatedField):
    """A SlugRelatedField that turns away values the database cannot even compare (NUL bytes, huge strings)
    with a 400, instead of letting the driver raise mid-query."""

    default_error_messages = {
        **serializers.SlugRelatedField.default_error_messages,
        "null_characters": "Null characters are not allowed.",
        "too_long": "No value longer than {max_length} characters exists here.",
    }
    max_value_length = 300

    def to_internal_value(self, data):
        if isinstance(data, str):
            if "\x00" in data:
                self.fail("null_characters")
            if len(data) > self.max_value_length:
                self.fail("too_long", max_length=self.max_value_length)
        return super().to_internal_value(data)
