"""A moto S3 server on 127.0.0.1 for the tests in this folder: started with
authentication on (every request after the IAM setup must carry a valid SigV4
signature), a user with an access key allowed s3:*, and a bucket."""
import os
import socket
import subprocess
import sys
import time
import urllib.request

import boto3

BUCKET = "kiln-test"
# moto lets this many requests through unauthenticated: the three IAM calls that
# create the user, its key and its policy. Everything after must be signed.
SETUP_ACTIONS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_ACTIONS))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=2)
                break
            except Exception:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()



def start_store():
    """(server, {"url", "port", "creds", "s3"}) with BUCKET created."""
    srv = Server()
    try:
        iam = boto3.client("iam", endpoint_url=srv.url, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="kiln")
        key = iam.create_access_key(UserName="kiln")["AccessKey"]
        iam.put_user_policy(UserName="kiln", PolicyName="s3", PolicyDocument=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
            '"Action":"s3:*","Resource":"*"}]}'))
        creds = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                 "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
        s3 = boto3.client("s3", endpoint_url=srv.url, region_name="us-east-1",
                          aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"])
        s3.create_bucket(Bucket=BUCKET)
    except BaseException:
        srv.stop()
        raise
    return srv, {"url": srv.url, "port": srv.port, "creds": creds, "s3": s3}
