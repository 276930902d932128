"""Amazon Bedrock's Converse API through boto3."""
